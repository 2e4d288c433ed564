-- Sign-in limits and one email key (docs/dashboard-auth.md, "Emails" and "Sign-in limits").

-- The one definition of an email's key, used for every comparison of emails: users, invites and
-- the sign-in limits all match on it, in SQL, so no two code paths can fold case differently (the
-- service used to key failures with JavaScript's toLowerCase and look users up with PostgreSQL's
-- lower(), whose answer depends on the server's locale: `İvan@…` found `ivan@…`'s account while
-- its failures were counted under another key). The key is the NFC form with the ASCII letters
-- lower-cased: the same on every server, whatever its locale. Other letters are not case-folded
-- (domains are ASCII or lower-case IDNA labels; a mailbox's local part is case-sensitive by RFC
-- 5321). NFC needs a UTF8 database; elsewhere the service sends emails already in NFC.
CREATE FUNCTION jobmon_email_key(email text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
  IF getdatabaseencoding() = 'UTF8' THEN
    email := normalize(email, NFC);
  END IF;
  RETURN translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
END
$$;

-- Two users whose emails now have the same key cannot both stay: say which, rather than failing
-- on the unique index below with a message that names neither.
DO $$
DECLARE
  clash text;
BEGIN
  SELECT string_agg(email, ', ' ORDER BY email) INTO clash
  FROM users
  WHERE jobmon_email_key(email) IN (SELECT jobmon_email_key(email) FROM users GROUP BY 1 HAVING count(*) > 1);
  IF clash IS NOT NULL THEN
    RAISE EXCEPTION 'these users'' emails differ only in letter case or Unicode form: %. Change or remove all but one of each, then start the service again.', clash;
  END IF;
END
$$;

ALTER TABLE users ADD COLUMN email_key text GENERATED ALWAYS AS (jobmon_email_key(email)) STORED;
DROP INDEX users_email_key;
CREATE UNIQUE INDEX users_email_key_idx ON users (email_key);

ALTER TABLE invites ADD COLUMN email_key text GENERATED ALWAYS AS (jobmon_email_key(email)) STORED;
-- The pending invites of an organization (their number is capped).
CREATE INDEX invites_pending_idx ON invites (org_id, expires_at) WHERE accepted_at IS NULL;

-- Failures were keyed by a differently folded email and counted after the password was checked;
-- a 15-minute history is not worth converting.
DROP TABLE sign_in_failures;

-- One row per sign-in attempt that is not known to have succeeded: written (under advisory locks
-- on the email key and the address) before the password is checked, deleted when it turns out
-- right. So the rows count failures and the checks in flight, and several instances share them.
CREATE TABLE sign_in_attempts (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email        text NOT NULL,          -- jobmon_email_key of the email tried
  address      text NOT NULL,          -- the client's address (IPv6: its /64)
  attempted_at timestamptz NOT NULL
);
CREATE INDEX sign_in_attempts_email_idx ON sign_in_attempts (email, attempted_at);
CREATE INDEX sign_in_attempts_address_idx ON sign_in_attempts (address, attempted_at);
CREATE INDEX sign_in_attempts_time_idx ON sign_in_attempts (attempted_at);

-- Addresses an account signed in from successfully: the account-wide slow-down spares them.
CREATE TABLE sign_in_known (
  email        text NOT NULL,          -- jobmon_email_key
  address      text NOT NULL,
  signed_in_at timestamptz NOT NULL,
  PRIMARY KEY (email, address)
);
CREATE INDEX sign_in_known_time_idx ON sign_in_known (signed_in_at);

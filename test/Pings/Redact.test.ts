import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { redact, REDACTED } from "../../src/Pings/Redact.js"

const R = REDACTED

/** [input, exact expected output]. */
const redacted: Record<string, Array<[string, string]>> = {
  "password assignments": [
    ["password=hunter2", `password=${R}`],
    ["PASSWORD=hunter2", `PASSWORD=${R}`],
    ["DB_PASSWORD=s3cr3t!", `DB_PASSWORD=${R}`],
    ["MYSQL_ROOT_PASSWORD=root", `MYSQL_ROOT_PASSWORD=${R}`],
    ["PGPASSWORD=abc psql -h db -U app", `PGPASSWORD=${R} psql -h db -U app`],
    ["export DB_PASSWORD=hunter2", `export DB_PASSWORD=${R}`],
    ["export DB_PASSWORD='hunter 2'", `export DB_PASSWORD='${R}'`],
    ["export DB_PASSWORD=\"hunter 2\"", `export DB_PASSWORD="${R}"`],
    ["+ DB_PASSWORD=x ./backup.sh", `+ DB_PASSWORD=${R} ./backup.sh`],
    ["password: hunter2", `password: ${R}`],
    ["  password: \"hunter2\"", `  password: "${R}"`],
    ["password : hunter2", `password : ${R}`],
    ["password = hunter2", `password = ${R}`],
    ["password:hunter2", `password:${R}`],
    ["{\"password\": \"hunter2\", \"user\": \"bob\"}", `{"password": "${R}", "user": "bob"}`],
    ["{\"password\":\"hun\\\"ter2\"}", `{"password":"${R}"}`],
    ["{\\\"password\\\":\\\"hunter2\\\"}", `{\\"password\\":\\"${R}\\"}`],
    ["{'password': 'hunter2'}", `{'password': '${R}'}`],
    ["'password' => 'hunter2',", `'password' => '${R}',`],
    ["password := \"hunter2\"", `password := "${R}"`],
    ["User{name=bob, password=hunter2}", `User{name=bob, password=${R}}`],
    ["login(user=bob, password=hunter2)", `login(user=bob, password=${R})`],
    ["?user=bob&password=hunter2&next=/", `?user=bob&password=${R}&next=/`],
    ["Server=db;User Id=app;Password=hunter2;Database=prod", `Server=db;User Id=app;Password=${R};Database=prod`],
    ["opts=--password=hunter2", `opts=--password=${R}`],
    ["--password=hunter2", `--password=${R}`],
    ["mysqldump --password hunter2 --all", `mysqldump --password ${R} --all`],
    ["tool --db-password \"two words\" -v", `tool --db-password "${R}" -v`],
    ["spring.datasource.password=hunter2", `spring.datasource.password=${R}`],
    ["-Djavax.net.ssl.keyStorePassword=changeit", `-Djavax.net.ssl.keyStorePassword=${R}`],
    ["userPassword: hunter2", `userPassword: ${R}`],
    ["passwd=hunter2", `passwd=${R}`],
    ["passphrase: correct-horse", `passphrase: ${R}`],
    ["SMTP_PASS=hunter2", `SMTP_PASS=${R}`],
    ["pass=hunter2", `pass=${R}`],
    ["openssl enc -k pass:hunter2", `openssl enc -k pass:${R}`],
    ["--pass hunter2", `--pass ${R}`],
    ["MYSQL_PWD=hunter2", `MYSQL_PWD=${R}`],
    ["--pwd=hunter2", `--pwd=${R}`],
    ["<password>hunter2</password>", `<password>${R}</password>`],
    ["password=p@ss:w0rd/with+chars", `password=${R}`],
    ["PASSWORD=${PASSWORD}", `PASSWORD=${R}}`]
  ],
  "API key and token assignments": [
    ["api_key=abc123", `api_key=${R}`],
    ["apikey=abc123", `apikey=${R}`],
    ["APIKEY=abc123", `APIKEY=${R}`],
    ["api-key: abc123", `api-key: ${R}`],
    ["X-API-Key: abc123", `X-API-Key: ${R}`],
    ["x-api-key: abc123", `x-api-key: ${R}`],
    ["{\"X-API-KEY\":\"abc123\"}", `{"X-API-KEY":"${R}"}`],
    ["apiKey: 'abc123'", `apiKey: '${R}'`],
    ["OPENAI_API_KEY=sk-abc123", `OPENAI_API_KEY=${R}`],
    ["--api-key abc123", `--api-key ${R}`],
    ["access_token=abc123", `access_token=${R}`],
    ["auth_token=abc123", `auth_token=${R}`],
    ["accessToken: abc123", `accessToken: ${R}`],
    ["token=abc123", `token=${R}`],
    ["Token: abc123", `Token: ${R}`],
    ["GITHUB_TOKEN=ghp_abc123", `GITHUB_TOKEN=${R}`],
    ["X-Auth-Token: abc123", `X-Auth-Token: ${R}`],
    ["//registry.npmjs.org/:_authToken=npm_abc123", `//registry.npmjs.org/:_authToken=${R}`],
    ["ngrok config add-authtoken=abc123", `ngrok config add-authtoken=${R}`],
    ["client_secret=abc123", `client_secret=${R}`],
    ["clientSecret: abc123", `clientSecret: ${R}`],
    ["JWT_SECRET=abc123", `JWT_SECRET=${R}`],
    ["secret=abc123", `secret=${R}`],
    ["SECRET_KEY=abc123", `SECRET_KEY=${R}`],
    ["secret_key_base: abc123", `secret_key_base: ${R}`],
    ["RAILS_MASTER_KEY=abc123", `RAILS_MASTER_KEY=${R}`],
    ["ENCRYPTION_KEY=abc123", `ENCRYPTION_KEY=${R}`],
    ["token: Bearer abc123", `token: Bearer ${R}`]
  ],
  "bearer tokens and Authorization headers": [
    ["Authorization: Bearer xyz", `Authorization: Bearer ${R}`],
    ["authorization: bearer xyz", `authorization: bearer ${R}`],
    ["> Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig\n> Accept: */*", `> Authorization: Bearer ${R}\n> Accept: */*`],
    ["curl -H 'Authorization: Bearer xyz' https://api.example.com", `curl -H 'Authorization: Bearer ${R}' https://api.example.com`],
    ["curl -H \"Authorization: Bearer xyz\" -X POST", `curl -H "Authorization: Bearer ${R}" -X POST`],
    ["{\"Authorization\": \"Bearer xyz\"}", `{"Authorization": "Bearer ${R}"}`],
    ["{'Authorization': 'Bearer xyz'}", `{'Authorization': 'Bearer ${R}'}`],
    ["Authorization: Basic dXNlcjpwYXNz", `Authorization: Basic ${R}`],
    ["Authorization: token ghp_abc123", `Authorization: token ${R}`],
    ["Authorization: xyz", `Authorization: ${R}`],
    ["Authorization: Digest username=\"bob\", response=\"6629fae4\"", `Authorization: Digest ${R}`],
    ["Proxy-Authorization: Basic dXNlcjpwYXNz", `Proxy-Authorization: Basic ${R}`],
    ["bearer xyz", `bearer ${R}`],
    ["Bearer xyz", `Bearer ${R}`],
    ["calling with Bearer abc.def-ghi_123 now", `calling with Bearer ${R} now`],
    ["Authorization: Bearer abc (expires in 3600s)", `Authorization: Bearer ${R} (expires in 3600s)`],
    ["Authorization: OAuth oauth_token=\"x\", oauth_signature=\"y\"", `Authorization: OAuth ${R}`],
    ["{\"token\": \"Bearer abc\"}", `{"token": "Bearer ${R}"}`]
  ],
  "cloud secret access keys": [
    ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY", `aws_secret_access_key = ${R}`],
    ["AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCY", `AWS_SECRET_ACCESS_KEY=${R}`],
    ["AWS_SESSION_TOKEN=FwoGZXIvYXdzE", `AWS_SESSION_TOKEN=${R}`],
    ["x-amz-security-token: FwoGZXIvYXdzE", `x-amz-security-token: ${R}`],
    ["AZURE_CLIENT_SECRET=abc~123", `AZURE_CLIENT_SECRET=${R}`],
    [
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc+def==;EndpointSuffix=core.windows.net",
      `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${R};EndpointSuffix=core.windows.net`
    ],
    ["Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=abc=", `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=${R}`],
    ["GOOGLE_API_KEY=AIzaSyabc", `GOOGLE_API_KEY=${R}`],
    ["GOOGLE_CLIENT_SECRET=GOCSPX-abc", `GOOGLE_CLIENT_SECRET=${R}`],
    ["DIGITALOCEAN_ACCESS_TOKEN=dop_v1_abc", `DIGITALOCEAN_ACCESS_TOKEN=${R}`]
  ],
  "private key blocks": [
    ["-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc==\n-----END RSA PRIVATE KEY-----", R],
    ["key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\ndone", `key:\n${R}\ndone`],
    ["-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----", R],
    ["-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n", `${R}\n`],
    ["-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----", R],
    ["-----BEGIN DSA PRIVATE KEY-----\r\nMIIB\r\n-----END DSA PRIVATE KEY-----\r\n", `${R}\r\n`],
    ["-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOY\n-----END PGP PRIVATE KEY BLOCK-----", R],
    ["a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\nc", `a\n${R}\nb\n${R}\nc`],
    ["before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\ncut off here", `before\n${R}`],
    [
      "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQ\\n-----END PRIVATE KEY-----\\n\", \"client_email\": \"a@b.iam\"}",
      `{"type": "service_account", "private_key": "${R}", "client_email": "a@b.iam"}`
    ]
  ],
  "URLs with credentials": [
    ["postgres://user:pass@host/db", `postgres://user:${R}@host/db`],
    ["DATABASE_URL=postgres://app:hunter2@db.internal:5432/prod", `DATABASE_URL=postgres://app:${R}@db.internal:5432/prod`],
    ["redis://:hunter2@cache:6379/0", `redis://:${R}@cache:6379/0`],
    ["mysql://root:p@ss@db/app", `mysql://root:${R}@db/app`],
    ["mongodb+srv://admin:hunter2@cluster0.mongodb.net/?retryWrites=true", `mongodb+srv://admin:${R}@cluster0.mongodb.net/?retryWrites=true`],
    ["git clone https://x-access-token:ghp_abc@github.com/o/r.git", `git clone https://x-access-token:${R}@github.com/o/r.git`],
    ["amqp://guest:guest@rabbit//", `amqp://guest:${R}@rabbit//`]
  ],
  "bare tokens of well-known services": [
    // Slack: bot, user, legacy workspace, refresh, configuration and app-level tokens
    ["posting with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", `posting with ${R}`],
    ["xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef", R],
    ["SLACK=xoxa-2-1234567890-abcdefghij", `SLACK=${R}`],
    ["xoxr-1234567890-abcdefghijk done", `${R} done`],
    ["app token xapp-1-A0123456789-1234567890123-abcdef0123456789", `app token ${R}`],
    // GitHub: classic personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained
    ["ghp_0123456789abcdefghijABCDEFGHIJ012345", R],
    ["remote: gho_0123456789abcdefghijABCDEFGHIJ012345 rejected", `remote: ${R} rejected`],
    ["(ghu_0123456789abcdefghijABCDEFGHIJ012345)", `(${R})`],
    ["ghs_0123456789abcdefghijABCDEFGHIJ012345\n", `${R}\n`],
    ["'ghr_0123456789abcdefghijABCDEFGHIJ012345'", `'${R}'`],
    ["github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345", R],
    // AWS access key ids (long-term and temporary)
    ["aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE", `aws configure set aws_access_key_id ${R}`],
    ["AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", `AWS_ACCESS_KEY_ID=${R}`],
    ["{\"AccessKeyId\": \"ASIAIOSFODNN7EXAMPLE\"}", `{"AccessKeyId": "${R}"}`],
    // jobmon's own tokens
    ["JOBMON_TOKEN was jmt_Q2hhbmdlIG1lIGJlZm9yZSB1c2luZyE", `JOBMON_TOKEN was ${R}`],
    ["curl -H \"X-Token: jmt_test_abcdefghijklmnopqrstuvwx\"", `curl -H "X-Token: ${R}"`],
    // GitLab personal access, deploy, pipeline trigger and runner tokens
    ["glpat-abcdefghij0123456789", R],
    ["using glpat-AbCdEfGhIjKlMnOpQrStUvWxYz.01.0abcdef12 for clone", `using ${R} for clone`],
    ["gldt-abcdefghij0123456789abcd", R],
    ["glptt-0123456789abcdef0123456789abcdef01234567", R],
    ["glrt-abcdefghij0123456789.", `${R}.`],
    // Stripe
    ["Stripe.api_key = sk_live_51H8abcdefghijklmnopqrstuv", `Stripe.api_key = ${R}`],
    ["rk_live_51H8abcdefghijklmnopqrstuv", R],
    ["sk_test_4eC39HqLyjWDarjtT1zdp7dc", R],
    ["rk_test_4eC39HqLyjWDarjtT1zdp7dc", R],
    ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", R],
    // npm, Google, OpenAI, Anthropic, Hugging Face, SendGrid, Shopify, PyPI, DigitalOcean
    ["//registry.npmjs.org/:_auth npm_0123456789abcdefghijABCDEFGHIJ012345", `//registry.npmjs.org/:_auth ${R}`],
    ["key AIzaSyA-0123456789abcdefghijklmnopqrstu used", `key ${R} used`],
    ["sk-proj-abcdefghij0123456789ABCDEFGHIJ", R],
    ["sk-ant-api03-abcdefghij0123456789_ABCDEFGHIJ-xyz", R],
    ["hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", R],
    ["SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", R],
    ["shpat_0123456789abcdef0123456789abcdef", R],
    ["pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcA", R],
    [`dop_v1_${"0123456789abcdef".repeat(4)}`, R],
    // several, with other secrets around them
    [
      "+ gh auth login --with-token ghp_0123456789abcdefghijABCDEFGHIJ012345\n+ password=hunter2 AKIAIOSFODNN7EXAMPLE,ASIAIOSFODNN7EXAMPLE",
      `+ gh auth login --with-token ${R}\n+ password=${R} ${R},${R}`
    ],
    ["ghp_0123456789abcdefghijABCDEFGHIJ012345_token=x", `${R}_token=${R}`]
  ],
  // A key ending in a secret keyword is a secret key whatever precedes it, however long (a key
  // over 200 characters used to be left alone, and the output's cut then kept `ssword=<secret>`).
  "keys glued to the word before them": [
    ["yyyypassword=hunter2", `yyyypassword=${R}`],
    [`${"y".repeat(3000)}password=hunter2 rest`, `${"y".repeat(3000)}password=${R} rest`],
    [`${"Y".repeat(201)}DB_PASSWORD: hunter2`, `${"Y".repeat(201)}DB_PASSWORD: ${R}`],
    [`${"9".repeat(500)}_token=abc`, `${"9".repeat(500)}_token=${R}`],
    [`{"${"y".repeat(300)}api_key": "abc"}`, `{"${"y".repeat(300)}api_key": "${R}"}`],
    ["{\"myapi_key\": \"abc\"}", `{"myapi_key": "${R}"}`],
    ["xaccess_key=abc", `xaccess_key=${R}`],
    ["xsecret_key_base=abc", `xsecret_key_base=${R}`],
    [`${"y".repeat(300)}x-api-key: abc`, `${"y".repeat(300)}x-api-key: ${R}`],
    ["yyyyauthorization: Basic dXNlcjpwYXNz", `yyyyauthorization: Basic ${R}`],
    [`${"y".repeat(3000)}Authorization: Bearer abc`, `${"y".repeat(3000)}Authorization: Bearer ${R}`],
    [`--${"y".repeat(300)}password hunter2 -v`, `--${"y".repeat(300)}password ${R} -v`],
    [`<${"y".repeat(300)}password>hunter2</${"y".repeat(300)}password>`, `<${"y".repeat(300)}password>${R}</${"y".repeat(300)}password>`]
  ],
  "several secrets in one output": [
    [
      "+ export DB_PASSWORD=hunter2\n+ curl -H 'Authorization: Bearer abc' https://u:p@x.io/\nok: uploaded 3 files\n",
      `+ export DB_PASSWORD=${R}\n+ curl -H 'Authorization: Bearer ${R}' https://u:${R}@x.io/\nok: uploaded 3 files\n`
    ],
    ["a=1 password=x b=2 token=y c=3", `a=1 password=${R} b=2 token=${R} c=3`]
  ]
}

/** Ordinary output that must come back unchanged. */
const unchanged: Record<string, Array<string>> = {
  "prose about secrets": [
    "password reset email sent to 3 users",
    "the key was rotated",
    "Passwords: 0 expired",
    "token bucket refilled",
    "Enter password:",
    "psql: error: FATAL:  password authentication failed for user \"app\"",
    "my password is not in this log",
    "secrets rotated: 4",
    "Bearer of bad news",
    "the bearer token expired",
    "Bearer authentication failed",
    "Bearer",
    "WWW-Authenticate: Bearer realm=\"api\", error=\"invalid_token\""
  ],
  "keys that are not secrets": [
    "tokens=5",
    "max_tokens=100",
    "token_type=bearer",
    "token_count: 12",
    "tokenizer=bert-base",
    "TOKEN_URL=https://auth.example.com/token",
    "password_file=/run/secrets/db",
    "PASSWORD_FILE=/run/secrets/db",
    "secret_name=prod-db",
    "key=value",
    "keys: 3",
    "PWD=/home/app",
    "OLDPWD=/",
    "pwd: /tmp",
    "compass=north bypass=1",
    `${"y".repeat(3000)}pass: 10`,
    `${"y".repeat(3000)}password_file=/run/secrets/db`,
    `${"y".repeat(3000)}_tokens=5`,
    "--- PASS: TestLogin (0.01s)",
    "PASS: test_suite",
    "pass: 10 fail: 0"
  ],
  "words that only look like the start of a known token": [
    "npm_config_cache=/home/app/.npm npm_package_version=1.2.3 npm_lifecycle_event=build",
    "hf_hub_download(repo_id='bert')",
    "token jmt_Q2hhbm shown in listings",
    "ghp_short",
    "xoxb-",
    "sk_live_ and sk_test_ keys are configured",
    "AKIAIOSFODNN7EXAMPL (15 characters)",
    "AKIAIOSFODNN7EXAMPLEx",
    "data:image/png;base64,iVBORw0KGgoXAKIAIOSFODNN7EXAMPLEghp_0123456789abcdefghijABCDEFGHIJ012345",
    "my-ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "SG.io ioctl",
    "github_pat_ prefix",
    "AIzaSy too short",
    "ASIA/Tokyo"
  ],
  "empty values, references and comparisons": [
    "password=",
    "password: \nnext: 1",
    "password=\"\"",
    "{\"password\": \"\"}",
    "{\"password\": {\"value\": null}}",
    "echo ${DB_PASSWORD}",
    "if password == expected",
    "--password --verbose",
    "--password"
  ],
  "URLs and keys without credentials": [
    "https://example.com/path?q=1#frag",
    "postgres://user@host/db",
    "http://localhost:8080/health",
    "git@github.com:org/repo.git",
    "ssh://git@github.com/org/repo",
    "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
    "ssh-rsa AAAAB3NzaC1yc2E user@host"
  ],
  "already redacted": [
    "",
    R,
    `password=${R}`,
    `Authorization: Bearer ${R}`,
    `postgres://user:${R}@host/db`,
    `{"password": "${R}"}`
  ]
}

/** A test's name: the input as JSON, a long run of one character written `y×3000`. */
const nameOf = (input: string): string => JSON.stringify(input).replace(/(.)\1{19,}/g, (run, c: string) => `${c}×${run.length}`)

describe("redact", () => {
  for (const [group, cases] of Object.entries(redacted)) {
    describe(group, () => {
      it.each(cases.map(([input, expected]) => [nameOf(input), input, expected]))("%s", (_name, input, expected) => {
        expect(redact(input)).toBe(expected)
        expect(redact(expected)).toBe(expected)
      })
    })
  }

  for (const [group, cases] of Object.entries(unchanged)) {
    describe(`leaves alone: ${group}`, () => {
      it.each(cases.map((input) => [nameOf(input), input]))("%s", (_name, input) => {
        expect(redact(input)).toBe(input)
      })
    })
  }

  // Inputs on which earlier versions were not idempotent (found by the properties below).
  it.each([
    "password=\"Bearer \\\"",
    "//secret:x-api-key:`xyz@",
    "https:postgres://x-api-keyof[.Authorization::`@",
    `Bearer --password ${R}Authorization: token`,
    "postgres://;token::@-----BEGIN PRIVATE KEY-----"
  ])("is idempotent on %j", (input) => {
    const once = redact(input)
    expect(once).not.toBe(input)
    expect(redact(once)).toBe(once)
  })

  it("keeps the key's own spelling and the surrounding text byte for byte", () => {
    const input = "step 3/4\n\tDB_Password = 'x' # from vault\n"
    expect(redact(input)).toBe(`step 3/4\n\tDB_Password = '${R}' # from vault\n`)
  })

  describe("finishes quickly on adversarial input of 1 MiB", () => {
    const MiB = 1024 * 1024
    const times = (unit: string) => Math.ceil(MiB / unit.length)
    const fill = (unit: string) => unit.repeat(times(unit))
    // Compares without printing a mebibyte when it fails.
    const same = (actual: string, expected: string) => {
      if (actual === expected) return
      let at = 0
      while (actual[at] === expected[at]) at++
      const near = (text: string) => JSON.stringify(text.slice(Math.max(0, at - 30), at + 30))
      throw new Error(`differs at ${at} of ${expected.length}: ${near(actual)} instead of ${near(expected)}`)
    }
    const cases: Array<[string, string, (out: string) => void]> = [
      ["a run of 'password'", fill("password"), (out) => same(out, fill("password"))],
      ["a run of 'a='", fill("a="), (out) => same(out, fill("a="))],
      ["a run of 'a:'", fill("a:"), (out) => same(out, fill("a:"))],
      ["a run of 'password='", fill("password="), (out) => same(out, `password=${R}`)],
      ["a run of 'password=x '", fill("password=x "), (out) => same(out, `password=${R} `.repeat(times("password=x ")))],
      ["a run of 'password=\"'", fill("password=\""), (out) => expect(/^(password="\*{3}REDACTED\*{3}")+(password=")?$/.test(out)).toBe(true)],
      ["a run of quotes", fill("\""), (out) => same(out, fill("\""))],
      ["a run of '--password '", fill("--password "), (out) => same(out, fill("--password "))],
      ["a run of \"'Authorization: x\"", fill("'Authorization: x"), (out) => expect(out.includes(": x")).toBe(false)],
      ["a run of 'token=***REDACTED***<'", fill(`token=${R}<`), (out) => same(out, fill(`token=${R}<`))],
      ["a run of 'bearer '", fill("bearer "), (out) => expect(out.includes("bearer bearer")).toBe(false)],
      ["a run of 'Bearer of '", fill("Bearer of "), (out) => same(out, fill("Bearer of "))],
      ["a run of '//u:a'", fill("//u:a"), (out) => same(out, fill("//u:a"))],
      ["one URL without '@'", "x://u:" + fill("a"), (out) => same(out, "x://u:" + fill("a"))],
      ["a run of BEGIN lines", fill("-----BEGIN RSA PRIVATE KEY-----"), (out) => same(out, R)],
      ["a run of '-----BEGIN '", fill("-----BEGIN "), (out) => same(out, fill("-----BEGIN "))],
      ["a run of '<password>'", fill("<password>"), (out) => same(out, fill("<password>"))],
      ["one key and 1 MiB of blanks", "password" + fill(" "), (out) => same(out, "password" + fill(" "))],
      // A key of any length is judged by its ending: this one ends with PASSWORD.
      ["one 1 MiB key in capitals", fill("PASSWORD") + "=x", (out) => same(out, fill("PASSWORD") + `=${R}`)],
      ["one 1 MiB key that is not a secret", fill("PASSWORD") + "_FILE=x", (out) => same(out, fill("PASSWORD") + "_FILE=x")],
      ["one 1 MiB bearer token of dots", "bearer " + fill("."), (out) => same(out, "bearer " + fill("."))],
      ["a run of ' AKIA'", fill(" AKIA"), (out) => same(out, fill(" AKIA"))],
      ["a run of ' ghp_'", fill(" ghp_"), (out) => same(out, fill(" ghp_"))],
      ["a run of ' SG.a'", fill(" SG.a"), (out) => same(out, fill(" SG.a"))],
      ["a run of '/whsec_a'", fill("/whsec_a"), (out) => same(out, fill("/whsec_a"))],
      ["one 1 MiB Slack token", fill("xoxb-"), (out) => same(out, R)],
      ["a run of AWS key ids", fill("AKIAIOSFODNN7EXAMPLE "), (out) => same(out, `${R} `.repeat(times("AKIAIOSFODNN7EXAMPLE ")))],
      ["one 1 MiB XML element name", `<${fill("password")}>x</${fill("password")}>`, (out) => same(out, `<${fill("password")}>${R}</${fill("password")}>`)],
      ["a run of 1 MiB glued to 'password=x'", fill("y1_") + "password=x", (out) => same(out, fill("y1_") + `password=${R}`)],
      ["a run of long keys", fill(`${"y".repeat(100)}Password=x `), (out) => same(out, `${"y".repeat(100)}Password=${R} `.repeat(times(`${"y".repeat(100)}Password=x `)))],
      ["a run of long keys that are not secrets", fill(`${"y".repeat(100)}Passwords=x `), (out) => same(out, fill(`${"y".repeat(100)}Passwords=x `))]
    ]
    it.each(cases)("%s", (_name, input, check) => {
      const out = redact(input)
      check(out)
      same(redact(out), out)
    }, 20_000)
  })

  describe("properties", () => {
    const fragments = FastCheck.constantFrom(
      "password", "PASSWORD", "pass", "pwd", "DB_", "PG", "token", "secret", "x-api-key", "apiKey",
      "Authorization", "Bearer ", "bearer", "Basic ", "of", "=", ":", "=>", ":=", " ", "\t", "\n",
      "\"", "'", "`", "\\", "\\\"", "--", "-", "_", ".", "//", "@", "/", "?", "#", "<", ">", "{", "}",
      "[", "]", "(", ")", ",", ";", "&", "*", R, "abc123", "S3CR3T42", "postgres://", "<password>",
      "</password>", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
      "ghp_", "AKIA", "xoxb-", "sk_live_", "jmt_", "glpat-", "AIza", "SG.", "npm_", "0123456789ABCDEF",
      "abcdefghijklmnopqrstuvwxyz0123456789"
    )
    const secretLooking = FastCheck.array(fragments, { maxLength: 40 }).map((parts) => parts.join(""))

    it.prop("is idempotent on arbitrary strings", [FastCheck.string({ unit: "binary", maxLength: 300 })], ([text]) => {
      const once = redact(text)
      expect(redact(once)).toBe(once)
    }, { fastCheck: { numRuns: 2000 } })

    it.prop("is idempotent on strings built from secret-looking fragments", [secretLooking], ([text]) => {
      const once = redact(text)
      expect(redact(once)).toBe(once)
    }, { fastCheck: { numRuns: 20_000 } })

    // Digits, blanks, punctuation (no '@', so no URL credentials) and the letters x, y, z cannot
    // spell a key, a scheme or a PEM line.
    const harmless = FastCheck.string({
      unit: FastCheck.constantFrom(..."0123456789 \t\n\r!\"#$%&'()*+,-./:;<=>?[\\]^_`{|}~xyzXYZ"),
      maxLength: 300
    })

    it.prop("returns text without any secret unchanged", [harmless], ([text]) => {
      expect(redact(text)).toBe(text)
    }, { fastCheck: { numRuns: 2000 } })

    const forms: Array<[string, string]> = [
      ["password=", ""],
      ["password: ", ""],
      ["\"password\": \"", "\""],
      ["export DB_PASSWORD='", "'"],
      ["--password ", ""],
      ["token=", ""],
      ["x-api-key: ", ""],
      ["Authorization: Bearer ", ""],
      ["bearer ", ""],
      ["AWS_SECRET_ACCESS_KEY=", ""],
      ["postgres://app:", "@db/prod"],
      ["<password>", "</password>"],
      ["-----BEGIN EC PRIVATE KEY-----\n", "\n-----END EC PRIVATE KEY-----"],
      [" ghp_0123456789abcdefghijABCDEFGHIJ", " "],
      [" xoxb-1234-", " "],
      [" jmt_0123456789abcdefghij", " "],
      [" sk_live_0123456789", " "]
    ]

    it.prop(
      "never leaves a secret value in the output",
      [
        FastCheck.array(FastCheck.string({ unit: "binary", maxLength: 40 }), { minLength: 1, maxLength: 5 }),
        FastCheck.constantFrom(...forms),
        FastCheck.nat(),
        FastCheck.nat()
      ],
      ([chunks, [before, after], digits, where]) => {
        const secret = `S3CR3T${digits}`
        const at = where % (chunks.length + 1)
        const text = [...chunks.slice(0, at), `${before}${secret}${after}`, ...chunks.slice(at)].join("\n")
        expect(redact(text)).not.toContain(secret)
      },
      { fastCheck: { numRuns: 3000 } }
    )
  })
})

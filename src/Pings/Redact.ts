/**
 * Redaction of secrets in job output (interface spec, "Ping bodies" rule 4; docs/decisions.md#pings,
 * #details-clients-depend-on).
 *
 * Pure: no I/O, no services. The value of each secret is replaced by {@link REDACTED}; the key,
 * the separator, the quotes and an authorization scheme (`Bearer`, `Basic`, …) stay, so the output
 * still reads. docs/redaction.md lists what is redacted and what is deliberately not.
 *
 * Design rules that the tests pin down:
 * - Idempotent: the marker is a valid value of every rule and never matches anything itself, and
 *   a replacement never joins text into a new match, so `redact(redact(x)) === redact(x)`.
 * - A string with nothing to redact is returned as it came (the same string).
 * - Linear time: every pattern is anchored on a literal or on the start of a maximal run, quoted
 *   values stop at the next quote or line end, and keys are classified in code rather than by one
 *   large alternation, so adversarial input (1 MiB of `password`, `a=`, `"`…) stays fast.
 */

export const REDACTED = "***REDACTED***"

/**
 * Private key blocks: PEM (`PKCS#1`/`PKCS#8`, RSA, EC, DSA, OPENSSH, ENCRYPTED) and PGP
 * (`PRIVATE KEY BLOCK`). The whole block, BEGIN and END lines included, becomes the marker; a
 * block without its END line (cut off, or pasted partially) is redacted to the end of the text.
 */
const PRIVATE_KEY_BLOCK =
  /-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----|$)/g

/**
 * The head of an assignment: a maximal run of key characters (`(?=(run))\1` makes it atomic, so
 * nothing backtracks into the run), an optional closing quote of a quoted key (`"`, `'`, or `\"`
 * in escaped JSON), then either a separator (`=`, `:`, `:=`, `=>`, with optional blanks) or, for
 * command-line flags only, blanks. `==` and `::` are comparisons and scopes, not assignments.
 */
const ASSIGNMENT_HEAD = /(?<![\w.-])(?=([\w.-]+))\1(\\?["']?)(?:([ \t]*(?:=>|:=|[:=](?![=:]))[ \t]*)|([ \t]+))/g

/**
 * An unquoted value, possibly after an unmatched opening quote. It ends at blanks, quotes and the
 * delimiters of query strings, connection strings, lists and objects: `, ; & ) ] }`.
 * (Quoted values are tried first, see {@link QUOTED_VALUE}.)
 */
const UNQUOTED_VALUE = /(\\?["'`]?)([^\s"'`,;&)\]}]+)/y
const BARE_UNQUOTED_VALUE = /()([^\s"'`,;&)\]}]+)/y

/** The quoted forms of a value: escaped-JSON, double-quoted, single-quoted, backquoted. */
const QUOTED_VALUE = /\\"((?:[^"\\\r\n]|\\[^"\r\n])*)\\"|"((?:[^"\\\r\n]|\\.)*)"|'([^'\r\n]*)'|`([^`\r\n]*)`/y

/**
 * An unquoted `Authorization` header value without a single-word scheme (see
 * {@link SINGLE_WORD_SCHEME}) runs to the end of the line: `Digest`, `OAuth` and
 * `AWS4-HMAC-SHA256` credentials hold blanks, commas and quotes. When the whole header is quoted
 * (`curl -H 'Authorization: Basic …' https://…`), it stops at that quote or at a backslash (an
 * escape such as `\r\n` inside a JSON string). Keyed by that quote.
 */
const AUTHORIZATION_VALUE: Readonly<Record<string, RegExp>> = {
  "": /(\\?["'`]?)([^\r\n]*\S)/y,
  "\"": /(\\?["'`]?)([^\r\n"\\]*[^\s"\\])/y,
  "'": /(\\?["'`]?)([^\r\n'\\]*[^\s'\\])/y,
  "`": /(\\?["'`]?)([^\r\n`\\]*[^\s`\\])/y
}

/** Authorization schemes that stay readable in front of the redacted credentials. */
const AUTHORIZATION_SCHEMES = "Basic|Bearer|Digest|Token|Negotiate|NTLM|ApiKey|Key|SSWS|DPoP|OAuth|AWS4-HMAC-SHA256"
const AUTHORIZATION_SCHEME = new RegExp(`^(?:${AUTHORIZATION_SCHEMES})[ \\t]+`, "i")
const AUTHORIZATION_SCHEME_AT = new RegExp(`(?:${AUTHORIZATION_SCHEMES})[ \\t]+`, "iy")
/** Schemes whose credentials are a single word (RFC 6750 `b64token`, base64, opaque tokens). */
const SINGLE_WORD_SCHEME = /^(?:Basic|Bearer|Token|ApiKey|Key|SSWS|DPoP|Negotiate|NTLM)[ \t]/i

/** The schemes that stay in front of the value of other secret keys (`token: Bearer abc`). */
const TOKEN_SCHEME_AT = /(?:Basic|Bearer)[ \t]+(?=\S)/iy
const TOKEN_SCHEME = /^(?:Basic|Bearer)[ \t]+(?=\S)/i

/** The optional, unmatched opening quote of an unquoted value (same as in the value patterns). */
const OPENING_QUOTE = /\\?["'`]?/y

/**
 * Key names, matched on the normalized key (see {@link normalizeKey}) at its END, whatever comes
 * before (`DB_PASSWORD`, `PGPASSWORD`, `yyyypassword`, `x-api-key`, `myapi_key`, `clientSecret`,
 * `AWS_SECRET_ACCESS_KEY`), while `password_file`, `tokens`, `token_type` and `Passwords` do not.
 * Only the ambiguous short `pass` and `pwd` need a word before them (`_pass`, `_pwd`): `bypass`.
 */
const SECRET_KEY =
  /(?:password|passwd|passphrase|secret|token|apikey|_pass|_pwd|(?:api|access|secret|private|account|signing|encryption|master)_key|secret_key_base)$/

const AUTHORIZATION_KEY = /authorization$/

/**
 * A key is judged by its last characters only: every secret key is told by its ending (the longest,
 * `secret_key_base` or `_encryption_key`, is 15 characters once normalized), so a key of any length
 * costs the same, and a long word glued to a keyword (`yyy…ypassword=`, a base64 blob, minified
 * code) cannot hide the secret after it. There must be no length limit on keys: output is cut to
 * its END after redaction, so a key left alone for its length would leave `ssword=<secret>`.
 * The tail keeps a margin before the longest ending, so the camelCase split and the collapsing of
 * `_-.` runs see the character before the keyword.
 */
const KEY_TAIL = 64

/** The tail of every secret key contains one of these as is (any case); most keys in ordinary output do not. */
const KEYWORD_HINT = /pass|pwd|secret|token|key|authorization/i

/** `DB_PASSWORD`, `db-password`, `db.password`, `dbPassword`, `--db-password` → `db_password`. */
const normalizeKey = (key: string): string =>
  key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z])(?=[A-Z][a-z])/g, "$1_")
    .toLowerCase()
    .replace(/[.-]/g, "_")
    .replace(/_{2,}/g, "_")
    .replace(/^_+|_+$/g, "")

type KeyKind = "plain" | "authorization"

/**
 * Whether a key names a secret. Bare `pass` and `pwd` are ambiguous and get narrower rules:
 * - `pwd` alone is the shell's working directory (`PWD=/home/app` in every `env` dump): only the
 *   flag `--pwd` counts; `MYSQL_PWD` and `db_pwd` count through the `_pwd` suffix.
 * - `pass` alone is a test verdict in `PASS: TestLogin` (Go, automake): it counts as a flag
 *   (`--pass x`) and in tight or `=` forms (`pass=x`, `pass:x`, `pass = x`), not as `pass: x`.
 */
const classifyKey = (key: string, separator: string): KeyKind | undefined => {
  const tail = key.length > KEY_TAIL ? key.slice(-KEY_TAIL) : key
  if (!KEYWORD_HINT.test(tail)) return undefined
  const normalized = normalizeKey(tail)
  if (AUTHORIZATION_KEY.test(normalized)) return "authorization"
  if (SECRET_KEY.test(normalized)) return "plain"
  const isFlag = key.startsWith("-")
  if (normalized === "pwd") return isFlag ? "plain" : undefined
  if (normalized === "pass") {
    return isFlag || !/^[ \t]*:[ \t]/.test(separator) ? "plain" : undefined
  }
  return undefined
}

/** The part of `text` to replace, as [start, end); undefined when there is nothing to hide. */
type Span = readonly [start: number, end: number, resumeAt: number]

/**
 * Parses the value at `at` and returns the span of its secret part. `headerQuote` is the quote
 * that opens a quoted header just before its key (`'Authorization: Basic …'`), or "".
 */
const valueSpan = (text: string, at: number, kind: KeyKind, headerQuote: string): Span | undefined => {
  QUOTED_VALUE.lastIndex = at
  const quoted = QUOTED_VALUE.exec(text)
  if (quoted !== null) {
    const group = quoted.findIndex((inner, index) => index > 0 && inner !== undefined)
    let start = at + (group === 1 ? 2 : 1)
    let value = quoted[group]!
    const scheme = (kind === "authorization" ? AUTHORIZATION_SCHEME : TOKEN_SCHEME).exec(value)
    if (scheme !== null) {
      start += scheme[0].length
      value = value.slice(scheme[0].length)
    }
    return value.length === 0 ? undefined : [start, start + value.length, at + quoted[0].length]
  }
  // An unquoted value that starts with the marker was redacted already, possibly by another rule
  // that kept what follows (`//db:***REDACTED***@host`): it ends with the marker. Checked before
  // the value is scanned, so that a line of `token=***REDACTED***…` stays linear.
  OPENING_QUOTE.lastIndex = at
  let start = at + OPENING_QUOTE.exec(text)![0].length
  const schemePattern = kind === "authorization" ? AUTHORIZATION_SCHEME_AT : TOKEN_SCHEME_AT
  schemePattern.lastIndex = start
  const scheme = schemePattern.exec(text)
  if (scheme !== null) start += scheme[0].length
  if (text.startsWith(REDACTED, start)) return [start, start + REDACTED.length, start + REDACTED.length]
  // One word after a scheme whose credentials are one word (`Bearer abc and more` keeps
  // `and more`), or after `token:`-like keys; else the patterns above.
  const oneWord = scheme !== null && (kind === "plain" || SINGLE_WORD_SCHEME.test(scheme[0]))
  BARE_UNQUOTED_VALUE.lastIndex = start
  const word = oneWord ? BARE_UNQUOTED_VALUE.exec(text) : null
  let value: string
  if (word !== null) {
    value = word[2]!
  } else if (kind === "authorization") {
    const pattern = AUTHORIZATION_VALUE[headerQuote]!
    pattern.lastIndex = at
    const match = pattern.exec(text)
    if (match === null) return undefined
    start = at + match[1]!.length
    value = match[2]!
    const inValue = AUTHORIZATION_SCHEME.exec(value)
    if (inValue !== null) {
      start += inValue[0].length
      value = value.slice(inValue[0].length)
    }
  } else {
    UNQUOTED_VALUE.lastIndex = at
    const match = UNQUOTED_VALUE.exec(text)
    if (match === null) return undefined
    value = match[2]!
    start = at + match[1]!.length
    // `"password": {` and `"password": [` open a nested structure; there is no value here.
    if (/^[{[]+$/.test(value)) return undefined
  }
  return value.length === 0 ? undefined : [start, start + value.length, start + value.length]
}

/** `//user:pass@host` is redacted by {@link redactUrlCredentials}, which keeps the host. */
const URL_PASSWORD_AHEAD = /[^\s/?#"'<>]*@/y

/**
 * When the key is the user of a URL with a password, returns the index after that password's `@`:
 * the assignment scan skips the whole password, which the URL rule redacts as one piece.
 */
const urlUserinfoEnd = (
  text: string,
  keyStart: number,
  closingQuote: string,
  separator: string,
  at: number
): number | undefined => {
  if (closingQuote !== "" || separator !== ":" || text.slice(keyStart - 2, keyStart) !== "//") return undefined
  URL_PASSWORD_AHEAD.lastIndex = at
  return URL_PASSWORD_AHEAD.test(text) ? URL_PASSWORD_AHEAD.lastIndex : undefined
}

/**
 * `key=value`, `key: value`, `"key": "value"`, `'key' => 'value'`, `export KEY=value`,
 * `--key=value` and `--key value`. A key that is not secret consumes only itself and its
 * separator, so a secret inside its value (`opts=--password=x`, a connection string) is still found.
 */
const redactAssignments = (text: string): string => {
  const head = new RegExp(ASSIGNMENT_HEAD.source, "g")
  const parts: Array<string> = []
  let copiedUpTo = 0
  let match: RegExpExecArray | null
  while ((match = head.exec(text)) !== null) {
    const key = match[1]!
    const closingQuote = match[2]!
    const flagBlanks = match[4]
    const separator = match[3] ?? flagBlanks!
    const at = match.index + match[0].length
    if (flagBlanks !== undefined && !key.startsWith("--")) continue
    const kind = classifyKey(key, separator)
    if (kind === undefined) continue
    if (flagBlanks !== undefined && (text[at] === "-" || at >= text.length)) continue
    const userinfoEnd = urlUserinfoEnd(text, match.index, closingQuote, separator, at)
    if (userinfoEnd !== undefined) {
      head.lastIndex = userinfoEnd
      continue
    }
    const before = text[match.index - 1]
    const headerQuote = closingQuote === "" && (before === "\"" || before === "'" || before === "`") ? before : ""
    const span = valueSpan(text, at, kind, headerQuote)
    if (span === undefined) continue
    const [start, end, resumeAt] = span
    parts.push(text.slice(copiedUpTo, start), REDACTED)
    copiedUpTo = end
    head.lastIndex = resumeAt
  }
  if (parts.length === 0) return text
  parts.push(text.slice(copiedUpTo))
  return parts.join("")
}

/** `<password>hunter2</password>` (XML configuration, SOAP). */
const XML_ELEMENT = /<([A-Za-z_][\w.-]*)>([^<\r\n]*)<\/\1>/g

const redactXmlElements = (text: string): string =>
  text.replace(XML_ELEMENT, (element, name: string, value: string) =>
    value.length > 0 && classifyKey(name, "=") !== undefined ? `<${name}>${REDACTED}</${name}>` : element)

/**
 * Bearer tokens in free text (`Authorization:` headers are handled as assignments). RFC 6750
 * token characters; the word after `Bearer` is kept when it is ordinary prose ("bearer of bad
 * news", "bearer token expired", "Bearer realm=…").
 */
const BEARER = /(?<![\w-])(bearer)([ \t]+)([\w.~+/=-]+)/gi
const BEARER_HINT = /bearer/i

const BEARER_PROSE = new Set(
  (
    "a an and are as at auth authentication authorisation authorization based be been bond " +
    "bonds but by can credential credentials error expected expired flow for format from " +
    "grant has have header headers if in instrument instruments invalid is may missing mode " +
    "must no not of on only or prefix realm required scheme schemes scope share shares should " +
    "string support supported the to token tokens type value was were will with"
  ).split(" ")
)

const isBearerProse = (word: string): boolean => {
  let end = word.length
  while (end > 0 && (word[end - 1] === "." || word[end - 1] === "=")) end--
  return end === 0 || BEARER_PROSE.has(word.slice(0, end).toLowerCase())
}

const redactBearerTokens = (text: string): string =>
  text.replace(BEARER, (whole, keyword: string, blanks: string, token: string) =>
    isBearerProse(token) ? whole : keyword + blanks + REDACTED)

/**
 * Credentials in URLs: `postgres://user:pass@host/db` → `postgres://user:***REDACTED***@host/db`.
 * The password runs to the LAST `@` of the authority, so an unencoded `@` in it is covered too.
 */
const URL_CREDENTIALS = /\/\/([^\s:/?#"'<>]*):([^\s/?#"'<>]*)@/g

const redactUrlCredentials = (text: string): string =>
  text.replace(URL_CREDENTIALS, (whole, user: string, password: string) =>
    password.length === 0 ? whole : `//${user}:${REDACTED}@`)

/**
 * Bare tokens of well-known services, recognised by their documented prefix and shape wherever they
 * stand, with or without a key (`echo $TOKEN` prints one on its own). The whole token becomes the
 * marker. Each is one literal prefix followed by one run of its alphabet, so a match costs its own
 * length; a token must start a word (not inside a base64 blob or an identifier that happens to
 * contain `AKIA`), and is not taken right after a marker (where another token was, which the first
 * pass did not take either: idempotence).
 */
const KNOWN_TOKENS: ReadonlyArray<readonly [service: string, pattern: string]> = [
  ["Slack", "xox[abeprs]-[0-9A-Za-z-]{10,}"],
  ["Slack app", "xapp-[0-9A-Za-z-]{10,}"],
  ["GitHub", "gh[opsur]_[0-9A-Za-z]{30,}"],
  ["GitHub fine-grained", "github_pat_[0-9A-Za-z_]{30,}"],
  ["AWS access key id", "(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"],
  ["jobmon", "jmt_[0-9A-Za-z_-]{20,}"],
  ["GitLab", "gl(?:pat|dt|ptt|rt)-[0-9A-Za-z_-]{20,}(?:\\.[0-9A-Za-z_-]+)*"],
  ["Stripe", "(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}"],
  ["Stripe webhook secret", "whsec_[0-9A-Za-z+/=]{20,}"],
  ["npm", "npm_[0-9A-Za-z]{30,}"],
  ["Google API key", "AIza[0-9A-Za-z_-]{35}(?![\\w-])"],
  ["OpenAI", "sk-(?:proj|svcacct|admin)-[0-9A-Za-z_-]{20,}"],
  ["Anthropic", "sk-ant-[0-9A-Za-z_-]{20,}"],
  ["Hugging Face", "hf_[0-9A-Za-z]{30,}"],
  ["SendGrid", "SG\\.[0-9A-Za-z_-]{16,}\\.[0-9A-Za-z_-]{16,}"],
  ["Shopify", "shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}"],
  ["PyPI", "pypi-AgEIcHlwaS5vcmc[0-9A-Za-z_-]{20,}"],
  ["DigitalOcean", "do[opr]_v1_[0-9a-f]{64}"]
]

const KNOWN_TOKEN = new RegExp(`(?<![\\w-]|REDACTED\\*{3})(?:${KNOWN_TOKENS.map(([, p]) => p).join("|")})`, "g")

/** Every known token contains one of these; ordinary output contains none, and is left as it came. */
const KNOWN_TOKEN_HINT = /xox[abeprs]-|xapp-|gh[opsur]_|github_pat_|A[KS]IA|jmt_|gl(?:pat|dt|ptt|rt)-|[rs]k_(?:live|test)_|whsec_|npm_|AIza|sk-(?:proj|svcacct|admin|ant)-|hf_|SG\.|shp(?:at|ca|pa|ss)_|pypi-|do[opr]_v1_/

const redactKnownTokens = (text: string): string => text.replace(KNOWN_TOKEN, REDACTED)

/**
 * Replaces the value of every secret in `text` with {@link REDACTED}, keeping the keys. Returns
 * `text` itself when there is nothing to redact.
 */
export const redact = (text: string): string => {
  let result = text.includes("PRIVATE KEY") ? text.replace(PRIVATE_KEY_BLOCK, REDACTED) : text
  // Each rule runs only where it could find something: every secret key contains a keyword (see
  // KEYWORD_HINT), a bearer token the word "bearer", URL credentials "//" and "@", a known token
  // its prefix (KNOWN_TOKEN_HINT). Most output ("12 files, 3.4 MB") has none of them and is
  // returned as it came, without a regex match.
  if (KEYWORD_HINT.test(result)) {
    result = redactAssignments(result)
    result = result.includes("</") ? redactXmlElements(result) : result
  }
  result = BEARER_HINT.test(result) ? redactBearerTokens(result) : result
  result = result.includes("//") && result.includes("@") ? redactUrlCredentials(result) : result
  // Last: a key that contains a token's prefix (`ghp_x_token=…`) is judged as a key first.
  result = KNOWN_TOKEN_HINT.test(result) ? redactKnownTokens(result) : result
  return result === text ? text : result
}

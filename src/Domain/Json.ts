/**
 * JSON nesting. `JSON.parse` takes any depth, but whatever walks the value afterwards recursively
 * (schema error messages, `JSON.stringify`, the logger) overflows the stack on a body of a few
 * hundred thousand brackets. No request of this API nests deeper than a handful of levels; a body
 * nested deeper than `MAX_JSON_DEPTH` is refused before it is parsed (docs/security.md).
 */
export const MAX_JSON_DEPTH = 64

/** True when the JSON text opens more than `max` arrays or objects inside one another (strings skipped). */
export const jsonNestedDeeperThan = (text: string, max: number = MAX_JSON_DEPTH): boolean => {
  // Fewer brackets than the limit cannot nest past it.
  if (text.length <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 0x5c) i++ // backslash: skip the escaped character
      else if (code === 0x22) inString = false
      continue
    }
    if (code === 0x22) inString = true
    else if (code === 0x5b || code === 0x7b) {
      if (++depth > max) return true
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return false
}

export const tooDeepMessage = `The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep; no field of this API nests so deep.`

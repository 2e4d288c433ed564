/** Benchmark settings from the environment: a blank or missing variable takes the default. */
export const env = (name: string, fallback: string) => {
  const value = process.env[name]
  return value === undefined || value.trim() === "" ? fallback : value.trim()
}

/** A whole number of at least `min`, or the benchmark stops before it starts, saying which variable. */
export const whole = (name: string, fallback: number, min = 1) => {
  const n = Number(env(name, String(fallback)))
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number ≥ ${min}`)
  return n
}

/** A number above zero. */
export const positive = (name: string, fallback: number) => {
  const n = Number(env(name, String(fallback)))
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number`)
  return n
}

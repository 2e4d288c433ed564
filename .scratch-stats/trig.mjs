import pg from "pg"
import { randomUUID } from "node:crypto"
const UPSERT = `insert into runs (id, monitor_id, org_id, status, started_at, finished_at, duration_ms)
select id, monitor_id, org_id, status, to_timestamp(s/1000.0), to_timestamp(f/1000.0), d from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::float8[], $6::float8[], $7::int8[]) t(id, monitor_id, org_id, status, s, f, d)
on conflict (id, started_at) do update set status = excluded.status, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms`
const monitors = Array.from({ length: 200 }, () => randomUUID())
const org = randomUUID(); const N = Number(process.env.N ?? 500); const NB = 50000 / N
for (const db of process.argv.slice(2)) {
  const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:5432/${db}`, max: 1 })
  let total = 0
  for (let rep = 0; rep < 3; rep++) {
  const t0 = performance.now()
  for (let b = 0; b < NB; b++) {
    const n = N, ids = [], ms = [], orgs = [], st = [], s = [], f = [], d = []
    const now = Date.now()
    for (let i = 0; i < n; i++) { ids.push(randomUUID()); ms.push(monitors[i % 200]); orgs.push(org); st.push("RUNNING"); s.push(now - 1000); f.push(null); d.push(null) }
    await pool.query({ name: "u", text: UPSERT, values: [ids, ms, orgs, st, s, f, d] })
    await pool.query({ name: "u", text: UPSERT, values: [ids, ms, orgs, st.map(() => "SUCCESS"), s, s.map(() => now), d.map(() => 1000)] })
  }
  const t = performance.now() - t0
  console.log(db, "200 statements x 500 rows:", t.toFixed(0), "ms =", (t * 1000 / 50000).toFixed(1), "µs/row")
  }
  await pool.end()
}

import pg from "pg"
import { inject } from "vitest"

/** Whether the test server can run TimescaleDB (installed and preloaded): its tests run only then. */
export const timescaleAvailable = async (): Promise<boolean> => {
  const client = new pg.Client({ connectionString: inject("adminDatabaseUrl") })
  await client.connect()
  try {
    const result = await client.query<{ ok: boolean }>(`
      select exists (select 1 from pg_available_extensions where name = 'timescaledb')
         and current_setting('shared_preload_libraries', true) like '%timescaledb%' as ok`)
    return result.rows[0]?.ok === true
  } finally {
    await client.end()
  }
}

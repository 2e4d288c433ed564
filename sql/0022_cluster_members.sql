-- Several instances (docs/operations.md#several-instances): each instance's row, for GET /api/cluster.
-- The shards an instance judges, when they last changed, and when it was last seen (every few
-- seconds while it runs; its row is deleted when it stops). Membership and shard ownership
-- themselves are @effect/cluster's (its cluster_runners table and PostgreSQL advisory locks):
-- this table only reports them.
create table if not exists cluster_members (
  address text primary key,
  shards int[] not null default '{}',
  changed_at timestamptz not null default now(),
  seen_at timestamptz not null default now()
);

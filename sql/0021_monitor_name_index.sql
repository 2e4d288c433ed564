-- GET /api/monitors?sort=name (docs/api.md, "Listing monitors"): a page of an organization's monitors
-- in name order, ignoring letter case, is a range scan of this index from the page's cursor (the
-- same expression and collation as the query's ORDER BY), where it was a sort of every monitor of
-- the organization. Names change rarely, so the index costs the engine's frequent updates of
-- status, last ping and next expected time nothing: they stay heap-only (HOT) updates. The other
-- sorts have no index on purpose: docs/performance.md, "Listing monitors".
CREATE INDEX monitors_org_name_idx ON monitors (org_id, (lower(name) COLLATE "C"), id) WHERE deleted_at IS NULL;

-- The `metrics` token scope: a key for Prometheus that can read GET /metrics and nothing else
-- (docs/metrics.md, docs/decisions.md#metrics).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check
  CHECK (scope IN ('admin', 'write', 'read', 'ping', 'metrics'));

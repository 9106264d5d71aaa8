-- Fair shares of a tenant's media storage (docs/SECURITY.md, "Storage"): an upload made for an
-- alert (a bridge's snapshot, or `POST /v1/media?for=alert`) may use the last part of the
-- quota that ordinary uploads leave free, and is linked only into alerts. A constant default:
-- no table rewrite.
ALTER TABLE media ADD COLUMN for_alert boolean NOT NULL DEFAULT false;

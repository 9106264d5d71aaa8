-- Where a watch group watches (issue #60): a polygon or a circle, as the API takes it
-- (`{"polygon": [[lon, lat], ...]}` or `{"circle": {"lat", "lon", "radius_m"}}`, checked by
-- Roost before it is stored), set by the group's owner or an admin; a group without one has
-- its tenant's default, set by the operator. Official warnings (CAP) reach the groups whose
-- area theirs meets. Nullable columns: no table rewrite.
ALTER TABLE groups ADD COLUMN area jsonb CHECK (area IS NULL OR jsonb_typeof(area) = 'object');
ALTER TABLE tenants ADD COLUMN default_area jsonb CHECK (default_area IS NULL OR jsonb_typeof(default_area) = 'object');

-- Where many tenants' groups stand, in one statement: the fanout's audit (every node, every
-- two seconds) reads the `last_seq` of each group its streams follow, to find a chat line
-- whose notice was lost. Read tenant by tenant, that was a transaction per tenant per round on
-- every node, the cost `session_sweeps` (0012) took out of the session sweep. This function
-- reads them all in one call and keeps row-level security in force: each tenant's groups are
-- read with that tenant set (transaction-local, as `SET LOCAL` would), and nothing else. The
-- setting is cleared before it returns. It runs as its caller (no SECURITY DEFINER) and
-- returns only ids and counters.
CREATE FUNCTION roost_group_standings(tenants uuid[], groups uuid[])
    RETURNS TABLE (tenant_id uuid, group_id uuid, last_seq bigint)
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    tenant uuid;
    ids uuid[];
BEGIN
    IF cardinality(tenants) IS DISTINCT FROM cardinality(groups) THEN
        RAISE EXCEPTION 'roost_group_standings: % tenants for % groups', cardinality(tenants), cardinality(groups)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The pairs sorted by tenant once, so each tenant's read looks up its own groups only.
    FOR tenant, ids IN
        SELECT w.t, array_agg(w.g) FROM unnest(tenants, groups) AS w (t, g) WHERE w.t IS NOT NULL GROUP BY w.t
    LOOP
        PERFORM set_config('roost.tenant_id', tenant::text, true);
        RETURN QUERY
            SELECT s.tenant_id, s.group_id, s.last_seq
            FROM unnest(ids) AS wanted (group_id)
            JOIN group_seqs s ON s.tenant_id = tenant AND s.group_id = wanted.group_id;
    END LOOP;
    PERFORM set_config('roost.tenant_id', '', true);
END
$$;

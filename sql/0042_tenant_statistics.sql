-- PostgreSQL collects no statistics for the tenant column of a tenant's table any more.
--
-- Row security adds `tenant_id = roost_current_tenant()` to every query, and when PostgreSQL
-- plans a query it estimates that condition by evaluating the function: with statistics, the
-- estimate is the share of the table held by the tenant the session names at that moment. A
-- prepared statement's generic plan, made once on a pooled connection, then serves every tenant
-- with the plan for whichever tenant the connection served when it planned: planned for a new
-- or small tenant, whose share is about nothing, every index that leads with tenant_id looks
-- as good as the one that fits the query, and a lookup of one message by its repeat key read
-- the whole tenant's messages instead (a shared commit of chat lines, 1.0 ms of PostgreSQL's
-- CPU a post in place of 0.2, in some of the benchmark's rounds and not others). Without the
-- column's statistics the condition is estimated alike for every tenant, as a small share of
-- a large table, and the index that fits the rest of the query wins. Queries never ask for a
-- tenant's rows without narrowing them further, so no plan needs the tenant's share.
--
-- ANALYZE leaves the statistics it no longer gathers as they were, so those already gathered
-- are deleted here, which takes a superuser: run by a role that is not one, this migration
-- says so in a NOTICE and a superuser deletes them later with the same statement (until then
-- plans are as before). New tenant tables get the same (`roost_protect_tenant_table`).
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT DISTINCT format('%I.%I', schemaname, tablename)::regclass FROM pg_policies WHERE policyname = 'tenant_isolation'
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN tenant_id SET STATISTICS 0', t);
    END LOOP;
    BEGIN
        DELETE FROM pg_statistic s USING pg_attribute a
        WHERE a.attrelid = s.starelid AND a.attnum = s.staattnum AND a.attname = 'tenant_id' AND a.attstattarget = 0;
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'the statistics already gathered for tenant_id stay: a superuser deletes them with DELETE FROM pg_statistic s USING pg_attribute a WHERE a.attrelid = s.starelid AND a.attnum = s.staattnum AND a.attname = ''tenant_id'' AND a.attstattarget = 0';
    END;
END
$$;

CREATE OR REPLACE FUNCTION roost_protect_tenant_table(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %s USING (tenant_id = roost_current_tenant()) '
                   'WITH CHECK (tenant_id = roost_current_tenant())', t);
    EXECUTE format('ALTER TABLE %s ALTER COLUMN tenant_id SET STATISTICS 0', t);
END
$$;

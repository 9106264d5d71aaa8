-- A throttle's window starts at the key's first hit instead of on the clock (issue #54).
--
-- Windows aligned to the epoch let a member spend a limit twice in a minute across the hour (or
-- the UTC day), and let a test that hit a limit near the hour see it reset under it. A key now
-- keeps one row: its window started at `window_start`, and a hit after `window_start + window`
-- starts a new one. Rows of keys nobody hit for a day are swept (`RateLimitStore.sweep`).
DELETE FROM rate_limit_counters older
    USING rate_limit_counters newer
    WHERE older.key_hash = newer.key_hash AND older.window_start < newer.window_start;
ALTER TABLE rate_limit_counters DROP CONSTRAINT rate_limit_counters_pkey;
ALTER TABLE rate_limit_counters ADD PRIMARY KEY (key_hash);
CREATE INDEX rate_limit_counters_window_start ON rate_limit_counters (window_start);

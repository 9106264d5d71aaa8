-- UnifiedPush devices (issue #55): a `unifiedpush` device may register a Web Push subscription
-- (its distributor's endpoint and the keys of RFC 8291), and is then pushed to exactly as a
-- browser is. One registered with a bare token still goes through the delivery webhook.
ALTER TABLE devices DROP CONSTRAINT devices_webpush_keys;
ALTER TABLE devices ADD CONSTRAINT devices_webpush_keys
    CHECK ((p256dh IS NULL) = (auth IS NULL) AND (p256dh IS NULL OR platform IN ('webpush', 'unifiedpush')));

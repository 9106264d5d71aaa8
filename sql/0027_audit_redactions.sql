-- Message redactions are audited (docs/SECURITY.md, "Moderation"): who removed which message,
-- so a manager erasing what was said is on record. The audit names the message by its seq.
-- Swapping a CHECK takes the table's lock for a scan of its rows: the audit log is small.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check
    CHECK (target_type IN ('user', 'invitation', 'bridge', 'alert', 'escalation_contact', 'group', 'templates', 'message'));

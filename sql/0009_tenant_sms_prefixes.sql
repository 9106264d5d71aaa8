-- The countries a tenant sends SMS to (invitations and codes), as E.164 prefixes ("+45",
-- "+4520"); NULL sends everywhere, as before. The operator narrows it (`roost tenant update
-- --sms-prefixes`) against SMS pumping: a hostile member inviting premium-rate numbers.
ALTER TABLE tenants ADD COLUMN sms_prefixes text[]
    CHECK (sms_prefixes IS NULL OR array_position(sms_prefixes, NULL) IS NULL);

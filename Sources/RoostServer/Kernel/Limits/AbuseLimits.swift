import Foundation

/// Limits on what one person or address can make Roost do (issue: hostile users; docs/SECURITY.md
/// lists each with its setting). Everything that reaches a person outside the app is among them.
public struct AbuseLimits: Sendable {
    /// Accounts created from one client address (an IPv6 /64) in an hour.
    public var registrationsPerAddressPerHour = 20
    /// Sign-ins naming a tenant that does not exist, from one address in 15 minutes.
    public var unknownTenantSignInsPerAddress = 20
    /// Invitations one member sends in a day, across their groups.
    public var invitationsPerSenderPerDay = 50
    /// Invitations one email address or phone number receives in a day, from anyone in the tenant.
    public var invitationsPerRecipientPerDay = 3
    /// Invitations sent from one group in a day.
    public var invitationsPerGroupPerDay = 200
    /// Groups one user creates in a day.
    public var groupsPerUserPerDay = 10
    /// Messages one account posts in a minute, on one node (a token bucket, in memory).
    public var postsPerAccountPerMinute = 60
    /// The clock that bucket refills by, in seconds (a test's stands still).
    public var postPaceClock: @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    /// Amber and red alerts one member raises in an hour (bridges have their own token bucket).
    public var alertsPerUserPerHour = 10
    /// Verification codes sent to one user in a day.
    public var verificationCodesPerUserPerDay = 5
    /// Password reset requests from one client address in an hour (each account's address has
    /// its own limit of 3, fixed).
    public var passwordResetsPerAddressPerHour = 10
    /// Wrong password reset codes from one client address in an hour.
    public var wrongResetCodesPerAddressPerHour = 20
    /// Emails and texts one address receives in a day, from any tenant and for any reason but
    /// alerts (`OutsideBudget`).
    public var outsidePerDestinationPerDay = 10
    /// Emails and texts one account causes in a day, every kind together.
    public var outsidePerAccountPerDay = 30
    /// The same for an account younger than a day or with no proven address.
    public var outsidePerNewAccountPerDay = 8
    /// Emails and texts one tenant sends in a day.
    public var outsidePerTenantPerDay = 20_000
    /// One upload's bytes (413 beyond, before the body is read when declared).
    public var maxUploadBytes = 25 << 20
    /// Uploads at once from one account, one bridge or one client address, on one node.
    public var uploadsPerUploader = 4
    /// What one tenant's media may take in all (413 `quota_exceeded` beyond).
    public var tenantMediaQuotaBytes = 1024 << 20
    /// The part of that quota one member's or one bridge's uploads may take, in percent.
    public var mediaSharePercent = 10
    /// The last part of the quota, in percent, kept for uploads made for an alert (a bridge's
    /// snapshot, `POST /v1/media?for=alert`): a full tenant can still show what happened.
    public var mediaAlertReservePercent = 5

    public init() {}

    /// No practical limit: for test fixtures that register hundreds of accounts from loopback.
    public static var generous: AbuseLimits {
        var limits = AbuseLimits()
        limits.registrationsPerAddressPerHour = 1_000_000
        limits.unknownTenantSignInsPerAddress = 1_000_000
        limits.invitationsPerSenderPerDay = 1_000_000
        limits.invitationsPerRecipientPerDay = 1_000_000
        limits.invitationsPerGroupPerDay = 1_000_000
        limits.groupsPerUserPerDay = 1_000_000
        limits.alertsPerUserPerHour = 1_000_000
        limits.postsPerAccountPerMinute = 1_000_000
        limits.verificationCodesPerUserPerDay = 1_000_000
        limits.passwordResetsPerAddressPerHour = 1_000_000
        limits.wrongResetCodesPerAddressPerHour = 1_000_000
        limits.outsidePerDestinationPerDay = 1_000_000
        limits.outsidePerAccountPerDay = 1_000_000
        limits.outsidePerNewAccountPerDay = 1_000_000
        limits.outsidePerTenantPerDay = 1_000_000
        limits.mediaSharePercent = 100
        limits.mediaAlertReservePercent = 0
        return limits
    }
}

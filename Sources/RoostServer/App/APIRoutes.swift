import RoostHTTP

/// The sections of API.md that need a signed-in user or a bridge, each registering its own
/// routes with what it needs: `roost serve` and the tests build the API from this one list.
/// (Operations and the operator's tenant routes have their own tokens and are added beside it.)
struct APIRoutes: Sendable {
    let accounts: AccountRoutes
    /// The shortest check-in deadline (`ROOST_CHECKIN_MIN_S`).
    let checkinMinimumSeconds: Int
    /// The stream's hub; nil leaves `GET /v1/stream` out (tests of the REST API alone).
    let hub: StreamHub?
    /// `ROOST_PUBLIC_URL`, for the links and sender of a group's CAP feed.
    var publicURL: String? = nil

    func add(to builder: inout Router.Builder) {
        let (auth, limits) = (accounts.auth, accounts.limits)
        accounts.add(to: &builder)
        ProfileRoutes(accounts: accounts).add(to: &builder)
        NotificationPreferenceRoutes(auth: accounts.auth).add(to: &builder)
        PasswordRoutes(accounts: accounts).add(to: &builder)
        SessionRoutes(auth: auth).add(to: &builder)
        AccountExportRoutes(auth: auth).add(to: &builder)
        ContactRoutes(auth: auth, limits: limits).add(to: &builder)
        GroupRoutes(auth: auth, limits: limits).add(to: &builder)
        AreaRoutes(auth: auth).add(to: &builder)
        CAPOutRoutes(auth: auth, publicURL: publicURL).add(to: &builder)
        MembershipRoutes(auth: auth).add(to: &builder)
        AuditRoutes(auth: auth).add(to: &builder)
        ModerationRoutes(auth: auth).add(to: &builder)
        InvitationRoutes(auth: auth, limits: limits, lifetime: accounts.invitationLifetime).add(to: &builder)
        MessageRoutes(auth: auth, limits: limits).add(to: &builder)
        EscalationContactRoutes(auth: auth, lifetime: accounts.invitationLifetime, limits: limits).add(to: &builder)
        LiveLocationRoutes(auth: auth).add(to: &builder)
        let bridges = BridgeAuthentication.announcingReturns(pool: auth.pool)
        BridgeRoutes(auth: auth, bridges: bridges).add(to: &builder)
        ToolRoutes(bridges: bridges, intake: BridgeIntake(pool: auth.pool)).add(to: &builder)
        let accounts = accounts
        MediaRoutes(auth: auth, bridges: bridges, limits: limits, clientAddress: { accounts.credentials.throttleAddress($0) }).add(to: &builder)
        let pins = CheckinPins(auth: accounts.auth, credentials: accounts.credentials)
        pins.add(to: &builder)
        CheckinRoutes(auth: auth, pins: pins, minimumSeconds: checkinMinimumSeconds).add(to: &builder)
        CheckinRequestRoutes(auth: auth).add(to: &builder)
        EmergencyContactRoutes(auth: auth, lifetime: accounts.invitationLifetime, limits: limits).add(to: &builder)
        if let hub { StreamRoutes.add(to: &builder, auth: auth, hub: hub) }
    }
}

import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// The alert's author, or a member who answered `on_my_way`, shares where they are while the
/// alert is open. Only the newest point is kept; the group is told at most every 2 s.
struct ShareLiveLocation: GroupUseCase {
    let group: UUID
    let seq: Int64
    let location: Location
    let battery: Int?
    /// When the point was taken (the request's arrival).
    let now: Date

    init(group: UUID, seq: Int64, lat: Double, lon: Double, accuracyM: Double?, battery: Int?, now: Date) throws(APIError) {
        let location = Location(lat: lat, lon: lon, accuracyM: accuracyM)
        try location.validate(field: "")
        if let battery, !(0...100).contains(battery) { throw APIError.invalid("battery is a percentage, 0 to 100", "battery") }
        self.group = group
        self.seq = seq
        self.location = location
        self.battery = battery
        self.now = now
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        let store = LiveLocationStore()
        let user = caller.user
        guard let state = try store.sharingState(group: group, seq: seq, user: user.id, on: connection) else { throw APIError.noSuchAlert }
        guard state.author || state.coming else {
            throw APIError.forbidden("only the alert's author and members on their way share their location")
        }
        guard state.open else { throw APIError(.conflict, code: .conflict, message: "the alert is closed") }
        let lastNotice = try store.store(tenant: user.tenantID, group: group, seq: seq, user: user.id, location: location, battery: battery,
                                         at: now, on: connection)
        switch LiveLocationPolicy.onUpdate(lastNotice: lastNotice, now: now) {
        case .noticeNow:
            let point = LivePoint(userID: user.id, displayName: user.displayName, lat: location.lat, lon: location.lon,
                                  accuracyM: location.accuracyM, battery: battery, at: now)
            try LiveLocationNotice.tell(point, tenant: user.tenantID, group: group, seq: seq, now: now, on: connection)
        case .coalesce(let until):
            try store.schedule(tenant: user.tenantID, group: group, seq: seq, user: user.id, due: until, flush: true, on: connection)
        }
    }
}

/// A member reads the newest point of each sharer of an alert.
struct ListLiveLocations: GroupUseCase {
    let group: UUID
    let seq: Int64

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> [LivePoint] {
        guard try LiveLocationStore().alertExists(group: group, seq: seq, on: connection) else { throw APIError.noSuchAlert }
        return try LiveLocationStore().points(group: group, seq: seq, on: connection)
    }
}

/// The scheduler's live-location round: each due job (claimed once across nodes) either tells
/// the group a coalesced point or ends a sharing idle for an hour. Each a job of its own.
struct LiveLocationJobs: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 100

    /// What a round did for one sharer.
    struct Done: Sendable, Equatable {
        let group: UUID
        let seq: Int64
        let user: UUID
        /// `location.updated` told (true) or the sharing ended (false).
        let updated: Bool
    }

    /// Handles every job due at `now`; the notices it sent.
    @discardableResult
    /// One round at `now`; with `tenant`, of that tenant's jobs only (a test driving rounds at
    /// chosen times leaves the other tests' tenants alone).
    func runOnce(now: Date = Date(), tenant: UUID? = nil) async throws -> [Done] {
        try await runner.drain(.liveLocation, pool: pool, perBatch: Self.perBatch,
                               claim: { try LiveLocationStore().claimDue(at: now, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { job, connection in
                                   let outcome = try handle(job, now: now, on: connection)
                                   return outcome == .none ? nil : Done(group: job.group, seq: job.seq, user: job.user, updated: outcome == .updated)
                               })
    }

    enum Outcome { case updated, ended, none }

    private func handle(_ job: ClaimedLiveLocation, now: Date, on connection: PostgresConnection) throws -> Outcome {
        let store = LiveLocationStore()
        let point: LivePoint
        switch try store.point(group: job.group, seq: job.seq, user: job.user, on: connection) {
        case .busy: return .none  // an update is being stored right now; it reschedules the job itself
        case .ended:
            try store.dropJob(job.id, on: connection)
            return .none
        case .point(let found): point = found
        }
        switch LiveLocationPolicy.onJob(flush: job.flush, pointAt: point.at, now: now) {
        case .notice:
            // Counted from the end of the interval it waited for, not from when this round got to
            // it: a sharer's notices keep to a 2 s grid instead of each one adding the round's
            // lateness (up to the scheduler's tick) to every later point's wait.
            try LiveLocationNotice.tell(point, tenant: job.tenant, group: job.group, seq: job.seq, now: min(now, job.dueAt), on: connection)
            return .updated
        case .end:
            try store.end(tenant: job.tenant, group: job.group, seq: job.seq, user: job.user, on: connection)
            try LiveLocationNotice.ended(tenant: job.tenant, group: job.group, seq: job.seq, user: job.user, reason: "idle", on: connection)
            return .ended
        case .wait(let until):
            try store.schedule(tenant: job.tenant, group: job.group, seq: job.seq, user: job.user, due: until, flush: false, on: connection)
            return .none
        }
    }
}

/// API.md "Incidents": live location while help is on the way.
struct LiveLocationRoutes: Sendable {
    let auth: Authentication

    struct PointBody: Decodable, KnownFields {
        let lat: Double
        let lon: Double
        let accuracyM: Double?
        let battery: Int?
        static let fieldNames: Set<String> = names(CodingKeys.self)

        enum CodingKeys: String, CodingKey, CaseIterable {
            case lat, lon, battery
            case accuracyM = "accuracy_m"
        }
    }

    struct PointView: Encodable {
        @LowercaseID var userID: UUID
        let displayName: String
        let lat: Double
        let lon: Double
        @Null var accuracyM: Double?
        @Null var battery: Int?
        let at: Date

        init(point: LivePoint) {
            (userID, displayName, lat, lon) = (point.userID, point.displayName, point.lat, point.lon)
            (accuracyM, battery, at) = (point.accuracyM, point.battery, point.at)
        }

        enum CodingKeys: String, CodingKey {
            case lat, lon, battery, at
            case userID = "user_id"
            case displayName = "display_name"
            case accuracyM = "accuracy_m"
        }
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups/{gid:uuid}/alerts/{seq:int}/live-location", bodyLimit: 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(PointBody.self)
            try await caller.run(ShareLiveLocation(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!, lat: body.lat,
                                                   lon: body.lon, accuracyM: body.accuracyM, battery: body.battery, now: Date()))
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/alerts/{seq:int}/live-locations", signedIn: auth) { context, caller in
            let points = try await caller.run(ListLiveLocations(group: context.parameters.uuid("gid")!, seq: context.parameters.int("seq")!))
            return try APIJSON.response(.ok, ["items": points.map(PointView.init)])
        }
    }
}

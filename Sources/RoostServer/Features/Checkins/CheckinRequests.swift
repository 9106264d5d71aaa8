import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// Check-in requests (API.md "Check-ins"; SafeWay's "request a check-in", Noonlight's): a
/// member asks a co-member "are you OK?". The addressee's devices get a `checkin_request` push
/// and their streams a notice; they answer `safe` or `need_help` (a red alert in that group, by
/// them); the requester hears the answer, or at `expires_at` that none came, with the
/// addressee's newest place only if the addressee allows it. Each asker and each addressee is
/// throttled, and one asker has one question pending to one member at a time.
enum CheckinRequests {
    /// How long an answer may take: 60 s to an hour, 300 s unless asked.
    static let expiry = 60...3600
    static let defaultExpiry = 300
    /// Requests one member may send in an hour, and one member may receive.
    static let sentPerHour = 10
    static let receivedPerHour = 5
    static let needHelpText = "I need help"

    static let noSuchRequest = APIError(.notFound, code: .notFound, message: "no such check-in request")

    /// `{id, group_id, requester: {id, display_name}, addressee: {...}, note, status, created_at,
    /// expires_at, answered_at, alert_seq, location, location_at}`: the request as both sides see it.
    static func json(_ request: CheckinRequest) -> String {
        func person(_ id: UUID, _ name: String) -> String {
            "{\"id\":\"\(id.lowercasedText)\",\"display_name\":\(JSONString.quote(name))}"
        }
        func time(_ date: Date?) -> String { date.map { JSONString.quote(APIJSON.time($0)) } ?? "null" }
        return "{\"id\":\"\(request.id.lowercasedText)\",\"group_id\":\"\(request.groupID.lowercasedText)\","
            + "\"requester\":\(person(request.requesterID, request.requesterName)),\"addressee\":\(person(request.addresseeID, request.addresseeName)),"
            + "\"note\":\(JSONString.quote(request.note)),\"status\":\(JSONString.quote(request.status)),\"created_at\":\(time(request.createdAt)),"
            + "\"expires_at\":\(time(request.expiresAt)),\"answered_at\":\(time(request.answeredAt)),"
            + "\"alert_seq\":\(request.alertSeq.map(String.init) ?? "null"),\"location\":\(request.sharedLocation ?? "null"),"
            + "\"location_at\":\(time(request.sharedLocationAt))}"
    }

    /// Tells one side of a request what happened to it: a notice on their streams and a push.
    static func tell(_ user: UUID, _ request: CheckinRequest, notice: NoticeKind, push: TemplateName, tenant: UUID,
                     on connection: PostgresConnection) throws {
        let data = json(request)
        try GroupEventLog.notifyUser(tenant: tenant, user: user, event: notice, data: data, on: connection)
        try OutboxStore().enqueuePushes(to: user, template: push, data: RawJSON("{\"checkin_request\":\(data)}"), on: connection)
    }
}

/// "Are you OK?" to a member of a group the caller is in (404 for anyone else, as for a user
/// who does not exist).
struct SendCheckinRequest: GroupUseCase {
    let group: UUID
    let addressee: UUID
    let note: String
    let seconds: Int

    init(group: UUID, addressee: UUID, note: String?, expiresInSeconds: Int?) throws(APIError) {
        self.group = group
        self.addressee = addressee
        self.note = try note.map { value throws(APIError) in try BoundedText.validate(value, field: "note", range: 0...500, allowNewlines: true) } ?? ""
        let seconds = expiresInSeconds ?? CheckinRequests.defaultExpiry
        guard CheckinRequests.expiry.contains(seconds) else { throw APIError.invalid("expires_in_s must be 60 to 3600 seconds", "expires_in_s") }
        self.seconds = seconds
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> CheckinRequest {
        let user = caller.user
        guard addressee != user.id else { throw APIError.invalid("ask someone else; your own answer is a check-in", "user_id") }
        guard try GroupStore().role(of: addressee, in: group, on: connection) != nil else { throw APIError.noSuchMember }
        let tenant = user.tenantID.uuidString
        try Throttle.count([RateLimit(RateLimitKey(.checkinRequestSent, tenant, user.id.uuidString), limit: CheckinRequests.sentPerHour, window: Throttle.hour),
                            RateLimit(RateLimitKey(.checkinRequestReceived, tenant, addressee.uuidString), limit: CheckinRequests.receivedPerHour,
                                      window: Throttle.hour)],
                           "too many check-in requests this hour", on: connection)
        guard let request = try CheckinRequestStore().create(tenant: user.tenantID, group: group, requester: user.id, addressee: addressee,
                                                             note: note, seconds: seconds, on: connection) else {
            throw APIError(.conflict, code: .conflict, message: "you already have a request waiting for their answer")
        }
        try CheckinRequests.tell(addressee, request, notice: .checkinRequestReceived, push: .checkinRequest, tenant: user.tenantID, on: connection)
        return request
    }
}

/// The addressee answers: `safe`, or `need_help`, which raises a red alert by them in the
/// request's group (if they are still in it). Anyone but the addressee gets 404; a request
/// answered or expired already, 409.
struct AnswerCheckinRequest: UserUseCase {
    let request: UUID
    let needsHelp: Bool
    let location: String?

    init(request: UUID, status: String, location: Location?) throws(APIError) {
        guard status == "safe" || status == "need_help" else { throw APIError.invalid("status must be safe or need_help", "status") }
        self.request = request
        self.needsHelp = status == "need_help"
        self.location = try location?.validatedJSON()
    }

    func run(by user: User, on connection: PostgresConnection) throws -> CheckinRequest {
        let store = CheckinRequestStore()
        guard let found = try store.find(request, forUpdate: true, on: connection), found.addresseeID == user.id else {
            throw CheckinRequests.noSuchRequest
        }
        guard found.status == "pending" else {
            throw APIError(.conflict, code: .conflict, message: found.status == "expired" ? "the request has expired" : "the request is answered already")
        }
        var seq: Int64?
        if needsHelp {
            guard try GroupStore().role(of: user.id, in: found.groupID, on: connection) != nil else {
                throw APIError(.conflict, code: .conflict, message: "you are no longer in the request's group; post the alert in a group")
            }
            let message = NewMessage(clientMessageID: nil, systemKey: "checkin-request:\(found.id.lowercasedText)",
                                     text: CheckinRequests.needHelpText, kind: .alert, severity: AlertSeverity.red.name, template: TemplateKey.needHelp.name,
                                     location: location, replyTo: nil)
            let posted = try MessageStore().post(tenant: user.tenantID, group: found.groupID, authorType: .user, authorID: user.id,
                                                 authorName: user.displayName, message: message, on: connection)
            try OutboxStore().enqueueAlertPushes(group: found.groupID, seq: posted.seq, excluding: user.id, alert: RawJSON(posted.json), red: true,
                                                 on: connection)
            seq = posted.seq
        }
        let answered = try store.answer(found.id, status: needsHelp ? "need_help" : "safe", alertSeq: seq, on: connection)
        try CheckinRequests.tell(found.requesterID, answered, notice: .checkinRequestAnswered, push: .checkinRequestAnswered,
                                 tenant: user.tenantID, on: connection)
        return answered
    }
}

extension ClaimedCheckinRequest: ClaimedJob {}

/// The scheduler's round of request expiries: a request still pending at `expires_at` is
/// `expired` and its requester told, with the addressee's newest place if they allow it.
struct CheckinRequestExpiries: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 50

    /// One round at `now`; with `tenant`, of that tenant's requests only.
    func runOnce(now: Date = Date(), tenant: UUID? = nil) async throws -> [UUID] {
        try await runner.drain(.checkinRequestExpiry, pool: pool, perBatch: Self.perBatch,
                               claim: { try CheckinRequestStore().claimDue(at: now, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { job, connection in try Self.expire(job, on: connection) })
    }

    private static func expire(_ job: ClaimedCheckinRequest, on connection: PostgresConnection) throws -> UUID? {
        let store = CheckinRequestStore()
        guard let request = try store.find(job.id, forUpdate: true, on: connection), request.status == "pending" else {
            try store.dropExpiry(job.id, on: connection)
            return nil
        }
        let place = try PreferenceStore().load(request.addresseeID, on: connection).shareLocationOnUnansweredRequest ? try store.newestPlace(of: request.addresseeID, on: connection) : nil
        let expired = try store.expire(request.id, sharing: place, on: connection)
        try CheckinRequests.tell(request.requesterID, expired, notice: .checkinRequestExpired, push: .checkinRequestExpired,
                                 tenant: job.tenant, on: connection)
        return request.id
    }
}

/// `POST /v1/checkin-requests`, `GET /v1/checkin-requests?role=sent|received`,
/// `POST /v1/checkin-requests/{id}/answer`, and the one preference they read.
struct CheckinRequestRoutes: Sendable {
    let auth: Authentication

    struct SendBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let userID: UUID
        let groupID: UUID
        let note: String?
        let expiresInSeconds: Int?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case note
            case userID = "user_id"
            case groupID = "group_id"
            case expiresInSeconds = "expires_in_s"
        }
    }

    struct AnswerBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let status: String
        let location: Location?
        enum CodingKeys: String, CodingKey, CaseIterable { case status, location }
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/checkin-requests", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(SendBody.self)
            let send = try SendCheckinRequest(group: body.groupID, addressee: body.userID, note: body.note, expiresInSeconds: body.expiresInSeconds)
            return .json(.created, Array(CheckinRequests.json(try await caller.run(send)).utf8))
        }
        builder.add(.get, "/v1/checkin-requests", signedIn: auth) { context, caller in
            let role = context.request.target.queryValue("role") ?? "received"
            guard role == "sent" || role == "received" else { throw APIError.invalid("role must be sent or received", "role") }
            let (limit, after) = (try context.limit(), try context.cursor(\.newestFirst))
            let requests = try await caller.inTenant { user, connection in
                try CheckinRequestStore().list(user: user.id, sent: role == "sent", after: after, limit: limit, on: connection)
            }
            let next = requests.count == limit ? requests.last.map { ListCursor.write(NewestFirst($0.createdAt, $0.id)) } : nil
            let items = requests.map(CheckinRequests.json).joined(separator: ",")
            return .json(.ok, Array("{\"items\":[\(items)],\"next\":\(next.map(JSONString.quote) ?? "null")}".utf8))
        }
        builder.add(.post, "/v1/checkin-requests/{id:uuid}/answer", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(AnswerBody.self)
            let answer = try AnswerCheckinRequest(request: context.parameters.uuid("id")!, status: body.status, location: body.location)
            return .json(.ok, Array(CheckinRequests.json(try await caller.run(answer)).utf8))
        }
    }
}

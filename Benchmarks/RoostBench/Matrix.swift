import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The few Matrix client-server API calls the Synapse side of the benchmark needs, over plain
/// HTTP/1.1 on loopback: accounts registered by an application service (no password to hash),
/// public rooms, joins, `/send`, and `/sync` long-polls with a filter that keeps each response
/// to the new messages' bodies.
///
/// The application service and its token are scripts/lib/peers/synapse-appservice.yaml; its
/// sender (`@poster`) creates every room and posts, as Roost's poster owns every group. Its
/// requests are not rate-limited; the members' are, at limits raised in synapse.yaml.
enum Matrix {
    static let appServiceToken = "roost-bench-appservice"

    /// A `/sync` filter: no presence, account data, state or ephemeral events, only message
    /// events' `content.body` (the bodies carry the post markers).
    static let filter: String = {
        let json = #"{"event_fields":["content.body"],"presence":{"types":[]},"account_data":{"types":[]},"#
            + #""room":{"state":{"types":[]},"ephemeral":{"types":[]},"account_data":{"types":[]},"#
            + #""timeline":{"limit":100,"types":["m.room.message"]}}}"#
        return json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }()

    /// A `/sync` request: the first (no `since`) returns at once with the position to follow
    /// from; each later one waits up to 30 s for events after `since`.
    static func sync(token: String, since: String?) -> [UInt8] {
        let query = since.map { "since=\($0)&timeout=30000" } ?? "timeout=0"
        return Array(("GET /_matrix/client/v3/sync?filter=\(filter)&set_presence=offline&\(query) HTTP/1.1\r\n"
            + "Host: bench\r\nAuthorization: Bearer \(token)\r\n\r\n").utf8)
    }

    private static let nextBatchKey = Array(#""next_batch":""#.utf8)

    /// The `next_batch` of a `/sync` response.
    static func nextBatch(in body: [UInt8]) -> String? {
        guard let start = firstIndex(of: nextBatchKey, in: body).map({ $0 + nextBatchKey.count }),
              let end = body[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: body[start..<end], as: UTF8.self)
    }

    static func path(room: String) -> String { room.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
}

/// One keep-alive connection to Synapse for setting up and posting (blocking).
final class MatrixClient {
    private let http: HTTPPoster
    /// Numbers each message's transaction ID within the process: Synapse answers a repeated
    /// (room, transaction) with the first event, without sending anything, and the posts
    /// scenario's two runs reuse their rooms and post numbers.
    private static let transactions = Atomic<Int>(0)

    init(port: UInt16) throws { http = try HTTPPoster(port: port) }

    private func call(_ method: String, _ path: String, _ body: [String: Any], token: String = Matrix.appServiceToken) throws -> [String: Any] {
        let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        let (status, answer) = try http.request(method, "/_matrix/client/v3" + path, body: text, token: token)
        guard status == 200, let object = try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any] else {
            throw BenchError("Synapse answered \(method) \(path) with \(status): \(answer.prefix(300))")
        }
        return object
    }

    /// Registers `name` through the application service; its access token.
    func register(_ name: String) throws -> String {
        guard let token = try call("POST", "/register", ["type": "m.login.application_service", "username": name])["access_token"] as? String else {
            throw BenchError("Synapse registered \(name) without an access token")
        }
        return token
    }

    /// A public room created by the application service's sender; its ID.
    func createRoom(_ name: String) throws -> String {
        guard let room = try call("POST", "/createRoom", ["preset": "public_chat", "name": name])["room_id"] as? String else {
            throw BenchError("Synapse created room \(name) without an ID")
        }
        return room
    }

    func join(_ room: String, token: String) throws { _ = try call("POST", "/join/\(Matrix.path(room: room))", [:], token: token) }

    /// Sends post `marker` to `room` as the application service's sender; true once Synapse has
    /// persisted it (its 200).
    func send(room: String, marker: Int) -> Bool {
        let transaction = Self.transactions.add(1, ordering: .relaxed).oldValue
        return (try? call("PUT", "/rooms/\(Matrix.path(room: room))/send/m.room.message/b\(marker)-\(getpid())-\(transaction)",
                   ["msgtype": "m.text", "body": postText(marker)])) != nil
    }
}

/// Synapse's members for a scenario: `rooms` new rooms and `count` new accounts (their names
/// unique to this run), member `i` joined to room `roomOf(i)`; their access tokens and the
/// rooms' IDs. Registration and joins go 16 at a time.
func matrixMembers(_ options: Options, count: Int, rooms: Int, roomOf: @escaping @Sendable (Int) -> Int) throws -> (tokens: [String], rooms: [String]) {
    let started = now()
    let setup = try MatrixClient(port: options.port)
    let roomIDs = try (0..<rooms).map { try setup.createRoom("bench-\(getpid())-\($0)") }
    let tokens = Mutex([String?](repeating: nil, count: count))
    let failure = Mutex<String?>(nil)
    let prefix = "b\(getpid())-\(UInt32.random(in: 0...UInt32.max))-m"
    paced(count: count, rate: nil, threads: 16, make: { try? MatrixClient(port: options.port) }) { client, index in
        do {
            let token = try client.register(prefix + String(index))
            try client.join(roomIDs[roomOf(index)], token: token)
            tokens.withLock { $0[index] = token }
        } catch {
            failure.withLock { $0 = $0 ?? "\(error)" }
        }
    }
    if let failure = failure.withLock({ $0 }) { throw BenchError("setting up Synapse's members: \(failure)") }
    let registered = tokens.withLock { $0.compactMap { $0 } }
    guard registered.count == count else { throw BenchError("only \(registered.count) of \(count) Synapse accounts were set up") }
    print(String(format: "  %d accounts registered and joined to %d rooms in %.1f s", count, rooms, Double(now() - started) / 1e9))
    return (registered, roomIDs)
}

import Foundation

/// A JSON API client on one keep-alive connection, replaced when the server closes it.
public final class APIClient: @unchecked Sendable {
    // `@unchecked Sendable`: used by one test at a time, like the TestClient it holds.
    public private(set) var client: TestClient
    public let port: UInt16
    private let receiveTimeoutSeconds: Int

    /// A request/response client: no test measures latency through it, so an answer may take as
    /// long as a whole suite starting on two shared cores can make it (a hang still fails).
    public static let defaultReceiveTimeoutSeconds = 120

    public init(client: TestClient, port: UInt16, receiveTimeoutSeconds: Int = APIClient.defaultReceiveTimeoutSeconds) {
        self.client = client
        self.port = port
        self.receiveTimeoutSeconds = receiveTimeoutSeconds
    }

    /// `receiveTimeoutSeconds`: how long an answer may take before the call fails.
    public convenience init(port: UInt16, receiveTimeoutSeconds: Int = APIClient.defaultReceiveTimeoutSeconds) throws {
        self.init(client: try TestClient(port: port, receiveTimeoutSeconds: receiveTimeoutSeconds), port: port,
                  receiveTimeoutSeconds: receiveTimeoutSeconds)
    }

    /// One JSON request and its answer; reconnects when the server closed the connection.
    /// `headers`: more header lines (an `Authorization` of another scheme, say).
    public func call(_ method: String, _ path: String, _ body: [String: Any]? = nil, token: String? = nil,
                     headers: [String: String] = [:]) async throws -> (Int, [String: Any]) {
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        var auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { auth += "\(name): \(value)\r\n" }
        client.send("\(method) \(path) HTTP/1.1\r\n\(auth)Content-Type: application/json\r\nContent-Length: \(data.count)\r\n\r\n"
                    + String(decoding: data, as: UTF8.self))
        let sent = ContinuousClock.now
        guard let response = await client.readResponse() else {
            throw TestClientError("no response to \(method) \(path) after \(ContinuousClock.now - sent) (limit \(receiveTimeoutSeconds) s)")
        }
        if response.headers["connection"] == "close" { try reconnect() }
        let object = response.body.isEmpty ? [:] : (try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:])
        return (response.status, object)
    }

    public func reconnect() throws {
        client = try TestClient(port: port, receiveTimeoutSeconds: receiveTimeoutSeconds)
    }
}

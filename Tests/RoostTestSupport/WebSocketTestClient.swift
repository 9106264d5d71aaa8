import Foundation
import RoostProtocol

/// A WebSocket client over `TestClient`: masked frames out, RoostProtocol's reader in.
public final class WebSocketTestClient: @unchecked Sendable {
    public let client: TestClient
    private var reader = WebSocketReader(role: .client, maxMessageBytes: 16 << 20)

    private init(client: TestClient) {
        self.client = client
    }

    /// Connects and upgrades; throws if the server does not answer 101.
    public static func connect(port: UInt16, path: String = "/v1/conformance/echo", receiveBuffer: Int32? = nil,
                        token: String? = nil) async throws -> WebSocketTestClient {
        // The handshake may wait as long as an API call on a busy machine (`APIClient`).
        let client = try TestClient(port: port, receiveBuffer: receiveBuffer, receiveTimeoutSeconds: APIClient.defaultReceiveTimeoutSeconds)
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\(auth)Upgrade: websocket\r\nConnection: Upgrade\r\n" +
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        guard let response = await client.readResponse(), response.status == 101,
              response.headers["sec-websocket-accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" else {
            throw TestClientError("no 101 from \(path)")
        }
        // A frame is waited for as long as an API answer: the wait only guards against a hang.
        // With every suite running at once on two cores, a stream's `ready` has been seen to
        // take more than 10 s. A test that reads until the stream falls quiet sets a shorter
        // wait for that (`client.setTimeout`).
        return WebSocketTestClient(client: client)
    }

    public func send(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) {
        var frame: [UInt8] = []
        WebSocketFrameEncoder.encode(opcode, payload: payload, fin: fin, maskKey: 0xA1B2_C3D4, into: &frame)
        client.send(frame)
    }

    public func sendText(_ text: String) { send(.text, Array(text.utf8)) }

    public func receive() async -> WebSocketMessage? {
        await offload { self.receiveBlocking() }
    }

    /// The next text frame (pings skipped); nil on timeout, close or EOF.
    public func receiveText() async -> String? {
        await offload { () -> String? in
            while let message = self.receiveBlocking() {
                switch message {
                case .text(let text): return text
                case .close: return nil
                default: continue
                }
            }
            return nil
        }
    }

    /// The next text frame as a JSON object (pings skipped); nil on timeout, close or EOF.
    public func receiveJSON() async -> [String: Any]? {
        await receiveText().flatMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    public func receiveClose() async -> WebSocketCloseCode?? {
        await offload { self.receiveCloseBlocking() }
    }

    /// The next message or control frame; nil on timeout, EOF, or a frame the reader refuses.
    public func receiveBlocking() -> WebSocketMessage? {
        while true {
            switch reader.next() {
            case .message(let message): return message
            case .failure: return nil
            case .needMore:
                guard let bytes = client.readSome(), !bytes.isEmpty else { return nil }
                reader.feed(bytes)
            }
        }
    }

    /// Skips pings and returns the close frame's code, or nil if the connection ends without one.
    public func receiveCloseBlocking() -> WebSocketCloseCode?? {
        while let message = receiveBlocking() {
            if case .close(let code, _) = message { return .some(code) }
        }
        return nil
    }
}

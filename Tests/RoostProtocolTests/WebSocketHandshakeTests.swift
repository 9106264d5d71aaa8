import Foundation
import RoostProtocol
import Testing

struct WebSocketHandshakeTests {
    func handshake(method: String = "GET", version: String = "HTTP/1.1", headers: [String]) -> Result<HTTPResponse, APIError> {
        let text = "\(method) /v1/stream \(version)\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n"
        guard case .request(let request) = parseAll(Array(text.utf8)).first else { fatalError("test request did not parse") }
        return WebSocketHandshake.accept(request)
    }

    let valid = ["Host: roost", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                 "Sec-WebSocket-Version: 13"]

    @Test func aValidHandshakeGets101WithTheAcceptValue() throws {
        let response = try handshake(headers: valid).get()
        #expect(response.status == .switchingProtocols)
        #expect(response.headers["Sec-WebSocket-Accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(response.headers["Upgrade"] == "websocket")
    }

    /// RFC 6455 §4.2.2: the 101 on the wire says `Connection: Upgrade` (browsers and Autobahn
    /// refuse the handshake without it), never keep-alive or close, and carries no length.
    @Test func the101OnTheWireSaysConnectionUpgrade() throws {
        var bytes: [UInt8] = []
        HTTPResponseWriter.write(try handshake(headers: valid).get(), keepAlive: true, date: "Sat, 21 Nov 2026 12:00:00 GMT", into: &bytes)
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        #expect(lines.first == "HTTP/1.1 101 Switching Protocols")
        #expect(lines.filter { $0.lowercased().hasPrefix("connection:") } == ["Connection: Upgrade"])
        #expect(lines.contains("Upgrade: websocket"))
        #expect(!lines.contains { $0.lowercased().hasPrefix("content-length:") })
    }

    @Test func upgradeAndConnectionAreCaseInsensitiveTokenLists() throws {
        let headers = ["Upgrade: foo, WebSocket", "Connection: keep-alive, UPGRADE", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                       "Sec-WebSocket-Version: 13"]
        #expect(try handshake(headers: headers).get().status == .switchingProtocols)
    }

    @Test func onlyGETIsAccepted() {
        guard case .failure(let error) = handshake(method: "POST", headers: valid) else { Issue.record("accepted POST"); return }
        #expect(error.status == .methodNotAllowed)
    }

    @Test func anotherVersionGets426NamingVersion13() {
        let headers = valid.filter { !$0.hasPrefix("Sec-WebSocket-Version") } + ["Sec-WebSocket-Version: 8"]
        guard case .failure(let error) = handshake(headers: headers) else { Issue.record("accepted version 8"); return }
        #expect(error.status == .upgradeRequired)
        #expect(error.headers["Sec-WebSocket-Version"] == "13")
    }

    @Test(arguments: ["", "dGhlIHNhbXBsZQ==", "not base64 at all!!!!!!!", "dGhlIHNhbXBsZSBub25jZQ=", "AAAAAAAAAAAAAAAAAAAAAAAAAA=="])
    func aKeyThatIsNotSixteenBytesOfBase64Is400(key: String) {
        let headers = valid.filter { !$0.hasPrefix("Sec-WebSocket-Key") } + ["Sec-WebSocket-Key: \(key)"]
        guard case .failure(let error) = handshake(headers: headers) else { Issue.record("accepted key \(key)"); return }
        #expect(error.status == .badRequest)
    }

    @Test func missingUpgradeOrConnectionIsRefused() {
        guard case .failure(let noUpgrade) = handshake(headers: valid.filter { !$0.hasPrefix("Upgrade") }) else {
            Issue.record("accepted without Upgrade"); return
        }
        #expect(noUpgrade.status == .upgradeRequired)
        guard case .failure(let noConnection) = handshake(headers: valid.filter { !$0.hasPrefix("Connection") }) else {
            Issue.record("accepted without Connection"); return
        }
        #expect(noConnection.status == .badRequest)
        guard case .failure(let http10) = handshake(version: "HTTP/1.0", headers: valid) else {
            Issue.record("accepted HTTP/1.0"); return
        }
        #expect(http10.status == .badRequest)
    }
}

import Foundation

/// The server's opening handshake (RFC 6455 §4.2).
public enum WebSocketHandshake {
    /// The GUID every server appends to the client's key (§1.3).
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Whether a request asks for an upgrade at all (so the router sends it here).
    public static func isUpgradeRequest(_ request: HTTPRequest) -> Bool {
        request.headers.tokens("Upgrade").contains("websocket")
    }

    /// The 101 response for a valid handshake, or the API error to answer instead.
    public static func accept(_ request: HTTPRequest) -> Result<HTTPResponse, APIError> {
        guard request.method == .get else {
            return .failure(APIError(
                .methodNotAllowed, code: .methodNotAllowed, message: "a WebSocket handshake must use GET",
                headers: ["Allow": "GET"]))
        }
        guard request.version == .http1_1 else {
            return .failure(APIError(.badRequest, code: .badRequest, message: "a WebSocket handshake needs HTTP/1.1"))
        }
        guard request.headers.tokens("Upgrade").contains("websocket") else {
            return .failure(APIError(
                .upgradeRequired, code: .upgradeRequired, message: "this endpoint needs Upgrade: websocket",
                headers: ["Upgrade": "websocket", "Connection": "Upgrade"]))
        }
        guard request.headers.tokens("Connection").contains("upgrade") else {
            return .failure(APIError(.badRequest, code: .badRequest, message: "a WebSocket handshake needs Connection: Upgrade"))
        }
        guard request.headers.values("Sec-WebSocket-Version").map({ $0.trimmingOWS() }) == ["13"] else {
            return .failure(APIError(
                .upgradeRequired, code: .unsupportedWebSocketVersion,
                message: "only WebSocket version 13 is supported", headers: ["Sec-WebSocket-Version": "13"]))
        }
        let keys = request.headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, let key = Optional(keys[0].trimmingOWS()), isValidKey(key) else {
            return .failure(APIError(
                .badRequest, code: .badRequest, message: "Sec-WebSocket-Key must be the base64 encoding of 16 bytes"))
        }
        var headers = HTTPHeaders()
        headers.add("Upgrade", "websocket")
        headers.add("Connection", "Upgrade")
        headers.add("Sec-WebSocket-Accept", acceptValue(forKey: key))
        return .success(HTTPResponse(status: .switchingProtocols, headers: headers))
    }

    /// base64(SHA-1(key + GUID)) (§4.2.2 step 5.4).
    public static func acceptValue(forKey key: String) -> String {
        Data(Digest.sha1(Array((key + guid).utf8))).base64EncodedString()
    }

    static func isValidKey(_ key: String) -> Bool {
        guard key.utf8.count == 24, let decoded = Data(base64Encoded: key) else { return false }
        return decoded.count == 16
    }
}

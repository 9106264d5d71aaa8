import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The few XMPP stanzas the ejabberd side of the benchmark needs (RFC 6120 streams, SASL PLAIN
/// and resource binding; XEP-0045 multi-user chat), over plain TCP on loopback.
///
/// Every user's password is `XMPP.password`; the benchmark writes the accounts straight into
/// ejabberd's `users` table (`auth_password_format: plain`), as it writes Roost's.
enum XMPP {
    static let password = "bench"

    /// The client's stream header, sent at the start and again after SASL success.
    static func header(domain: String) -> [UInt8] {
        Array(("<?xml version='1.0'?><stream:stream to='\(domain)' xmlns='jabber:client' "
            + "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>").utf8)
    }

    static func auth(user: String) -> [UInt8] {
        let credentials = Data([0] + Array(user.utf8) + [0] + Array(password.utf8)).base64EncodedString()
        return Array("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>\(credentials)</auth>".utf8)
    }

    static let bind = Array("<iq type='set' id='bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>".utf8)

    /// Joins `room` as `nick`, asking for no history (a member that is live from now on, like a
    /// Roost stream resumed with no cursors).
    static func join(room: String, domain: String, nick: String) -> [UInt8] {
        Array(("<presence to='\(room)@conference.\(domain)/\(nick)'><x xmlns='http://jabber.org/protocol/muc'>"
            + "<history maxstanzas='0'/></x></presence>").utf8)
    }

    static func groupchat(room: String, domain: String, id: String, text: String) -> [UInt8] {
        let escaped = text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        return Array("<message to='\(room)@conference.\(domain)' type='groupchat' id='\(id)'><body>\(escaped)</body></message>".utf8)
    }

    /// What the client waits for at each step of opening a session, in order: the features
    /// (offer SASL), `<success`, the features again (offer binding), the bound `</iq>`, and the
    /// room's presence for oneself (status 110). A `<failure` or `<stream:error` ends it.
    static let milestones = ["</stream:features>", "<success", "</stream:features>", "</iq>", "code='110'"].map { Array($0.utf8) }
    static let refusals = ["<failure", "<stream:error", "type='error'"].map { Array($0.utf8) }

    /// The request that follows milestone `step` (the stream header opens step 0 and is sent at connect).
    static func afterMilestone(_ step: Int, user: String, room: String, domain: String) -> [UInt8] {
        switch step {
        case 0: return auth(user: user)
        case 1: return header(domain: domain)
        case 2: return bind
        default: return join(room: room, domain: domain, nick: user)
        }
    }

    /// Finds whole `<message …>…</message>` stanzas in a byte stream without parsing XML: the
    /// benchmark only needs each message's bytes to find its post marker. Bytes of other stanzas
    /// (presence) are dropped once no message can start in them.
    struct Splitter {
        private var buffer: [UInt8] = []
        private static let open = Array("<message".utf8), close = Array("</message>".utf8)

        /// Feeds received bytes; calls `message` with each complete message stanza.
        mutating func feed(_ bytes: [UInt8], _ message: (ArraySlice<UInt8>) -> Void) {
            buffer += bytes
            var consumed = 0
            while let start = find(Self.open, from: consumed), let end = find(Self.close, from: start) {
                message(buffer[start..<(end + Self.close.count)])
                consumed = end + Self.close.count
            }
            // Keep an unfinished message, or the tail that could be the start of `<message`.
            if let start = find(Self.open, from: consumed) {
                consumed = start
            } else {
                consumed = max(consumed, buffer.count - (Self.open.count - 1))
            }
            if consumed > 0 { buffer.removeFirst(consumed) }
        }

        private func find(_ needle: [UInt8], from: Int) -> Int? { firstIndex(of: needle, in: buffer, from: from) }
    }
}

/// A blocking XMPP session for posting: opens the stream, authenticates, binds, and optionally
/// joins a room (a poster that joins gets its own messages back, which the `posts` scenario
/// waits for as ejabberd's acknowledgement: MUC reflects a message after mod_mam stored it).
final class XMPPSession {
    private let fd: Int32
    private var buffer: [UInt8] = []
    let domain: String

    init(port: UInt16, domain: String, user: String, room: String? = nil) throws {
        self.domain = domain
        fd = try connectLoopback(port: port)
        try send(XMPP.header(domain: domain))
        for step in 0..<(room == nil ? 4 : 5) {
            try waitFor(XMPP.milestones[step])
            if step < 4 && (step < 3 || room != nil) {
                try send(XMPP.afterMilestone(step, user: user, room: room ?? "", domain: domain))
            }
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) throws {
        guard sendAll(fd, bytes) else { throw BenchError("ejabberd closed the poster's connection") }
    }

    /// Reads until `needle` arrives; drops what came before it and the needle itself.
    func waitFor(_ needle: [UInt8]) throws {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            if let index = firstIndex(of: needle, in: buffer) {
                buffer.removeFirst(index + needle.count)
                return
            }
            if let refusal = XMPP.refusals.first(where: { firstIndex(of: $0, in: buffer) != nil }) {
                throw BenchError("ejabberd refused the poster (\(String(decoding: refusal, as: UTF8.self))): \(String(decoding: buffer.prefix(300), as: UTF8.self))")
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw BenchError("ejabberd closed the poster's connection") }
            buffer += chunk[0..<count]
        }
    }
}

import Foundation
import RoostProtocol

/// One HTTP/1.1 GET to a server outside, for a job that reads what it is given (a warning
/// feed's poll): through the outbound policy like every request Roost makes, over TLS for
/// https, with conditional headers, a bounded body and one deadline for the whole exchange.
/// Redirects are followed a few times, each target judged by the policy as a URL a stranger
/// chose. Blocking: run it on a thread of its own, never on an event loop or Swift's
/// cooperative pool (`getDetached`).
struct OutboundFetch: Sendable {
    let network: OutboundNetwork
    let tls: TLSClientContext?
    /// The most bytes an answer's body may have; past it the fetch fails for good (`isRefusal`).
    var maxBytes = 2 << 20
    var maxRedirects = 3
    /// Who asks: publishers ask clients to say (`roost (+https://watch.example.org)`).
    var userAgent = "roost"
    /// What the answer should be, most wanted first.
    var accept = "application/xml, */*;q=0.1"

    struct Answer: Sendable {
        let status: Int
        /// Lower-cased names.
        let headers: [String: String]
        let body: [UInt8]
        /// Where the answer came from, after any redirect.
        let url: String
    }

    /// GETs `text`, a URL from `source`; `headers` are added to the request (`If-None-Match`...).
    func get(_ text: String, from source: OutboundPolicy.Source, headers: [(String, String)] = [],
             deadline: ContinuousClock.Instant) throws(OutboundFailure) -> Answer {
        var (location, source) = (text, source)
        for _ in 0...maxRedirects {
            let answer = try once(location, from: source, headers: headers, deadline: deadline)
            guard [301, 302, 303, 307, 308].contains(answer.status), let next = answer.headers["location"] else { return answer }
            // A relative Location is resolved against the URL it answered.
            guard let resolved = URL(string: next, relativeTo: URL(string: location))?.absoluteString else {
                throw OutboundFailure("\(location) redirected to \(next), which is not a URL")
            }
            (location, source) = (resolved, .subscriber)
        }
        throw OutboundFailure("\(text) redirected more than \(maxRedirects) times")
    }

    private func once(_ text: String, from source: OutboundPolicy.Source, headers: [(String, String)],
                      deadline: ContinuousClock.Instant) throws(OutboundFailure) -> Answer {
        let url: OutboundURL
        do {
            url = try network.policy.url(text, from: source, schemes: ["https", "http"])
        } catch {
            throw OutboundFailure(error)
        }
        let stream = try OutboundStream(to: url, through: network, deadline: deadline)
        defer { stream.close() }
        if url.scheme == "https" {
            guard let tls else { throw OutboundFailure("TLS is not available to reach \(url.origin)") }
            try stream.startTLS(tls)
        }
        var request = "GET \(url.target) HTTP/1.1\r\nHost: \(url.authority)\r\nUser-Agent: \(userAgent)\r\nAccept: \(accept)\r\n"
            + "Connection: close\r\n"
        for (name, value) in headers where !value.contains(where: { $0 == "\r" || $0 == "\n" }) { request += "\(name): \(value)\r\n" }
        try stream.write(Array((request + "\r\n").utf8))
        var framing = HTTPResponseFraming()
        framing.limit = maxBytes
        var received: [UInt8] = []
        while true {
            let piece = try stream.read(limit: 65_536)
            received += piece
            guard received.count <= maxBytes + 16_384 else { throw OutboundFailure(final: "\(url.origin) sent more than \(maxBytes) bytes") }
            switch framing.step(received, closed: piece.isEmpty) {
            case .needMore: continue
            case .malformed(let problem) where problem.contains("over \(maxBytes)"): throw OutboundFailure(final: "\(url.origin): \(problem)")
            case .malformed(let problem): throw OutboundFailure("\(url.origin): \(problem)")
            case .complete(let response, let consumed, _):
                guard let body = HTTPResponseFraming.body(received, consumed: consumed) else {
                    throw OutboundFailure("\(url.origin): the body could not be read")
                }
                return Answer(status: response.status, headers: response.headers, body: body, url: text)
            }
        }
    }

    /// `get` off Swift's cooperative threads (it blocks in `connect`, `poll` and the resolver).
    func getDetached(_ text: String, from source: OutboundPolicy.Source, headers: [(String, String)] = [],
                     deadline: ContinuousClock.Instant) async throws(OutboundFailure) -> Answer {
        let result: Result<Answer, OutboundFailure> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(OutboundFailure) in try get(text, from: source, headers: headers, deadline: deadline) })
            }
        }
        return try result.get()
    }
}

// roost-protocol-bench: throughput of RoostProtocol's codecs on one core. Release build only:
//   swift run -c release roost-protocol-bench
// Prints each figure beside its goal (issue "RoostProtocol"); it is a measurement, not a test.
// An argument picks sections: `http`, `decode`, `encode`, `uuid`, `json`, `webpush`, `cap` (default: all).

import Foundation
import RoostProtocol

/// Runs `body` repeatedly for about `seconds` and returns (iterations, elapsed seconds).
func measure(seconds: Double = 1.5, batch: Int, _ body: () -> Void) -> (Int, Double) {
    for _ in 0..<batch { body() }  // warm up
    let clock = ContinuousClock()
    let start = clock.now
    var iterations = 0
    var elapsed = 0.0
    repeat {
        for _ in 0..<batch { body() }
        iterations += batch
        let duration = clock.now - start
        elapsed = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    } while elapsed < seconds
    return (iterations, elapsed)
}

func report(_ name: String, _ value: Double, _ unit: String, goal: Double?) {
    let figure = String(Int(value.rounded()))
    var line = name.padding(toLength: 50, withPad: " ", startingAt: 0)
    line += String(repeating: " ", count: max(0, 12 - figure.count)) + figure + " " + unit.padding(toLength: 9, withPad: " ", startingAt: 0)
    if let goal { line += "  goal \(Int(goal)) \(unit): " + (value >= goal ? "met" : "NOT MET") }
    print(line)
}

let sections = Set(CommandLine.arguments.dropFirst())
func wanted(_ section: String) -> Bool { sections.isEmpty || sections.contains(section) }

// MARK: HTTP request parsing

let apiRequest: [UInt8] = {
    let body = #"{"client_msg_id":"5f0c1a2e-0d3b-4c1e-9a56-1c2d3e4f5a6b","text":"Suspicious van on Elm St","kind":"alert","severity":"amber"}"#
    var text = "POST /v1/groups/6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b/messages HTTP/1.1\r\n"
    text += "Host: roost.example.org\r\nAuthorization: Bearer rst_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\r\n"
    text += "Content-Type: application/json\r\nUser-Agent: RoostApp/1.0\r\nAccept: */*\r\n"
    text += "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    return Array(text.utf8)
}()

var parsedBodies = 0
if wanted("http") {
    var parser = HTTPRequestParser()
    let (requests, seconds) = measure(batch: 10_000) {
        parser.feed(apiRequest)
        if case .request(let request) = parser.next() { parsedBodies &+= request.body.count } else { fatalError("parse failed") }
    }
    report("HTTP \(apiRequest.count)-byte API requests parsed", Double(requests) / seconds, "req/s", goal: 500_000)
}

// MARK: WebSocket frame decoding

func maskedFrames(payloadSize: Int, opcode: WebSocketOpcode, totalBytes: Int) -> [UInt8] {
    let payload = (0..<payloadSize).map { UInt8(0x41 + $0 % 26) }
    var frame: [UInt8] = []
    WebSocketFrameEncoder.encode(opcode, payload: payload, maskKey: 0x1234_5678, into: &frame)
    var stream: [UInt8] = []
    stream.reserveCapacity(totalBytes + frame.count)
    while stream.count < totalBytes { stream += frame }
    return stream
}

for (size, opcode, label) in [(64, WebSocketOpcode.binary, "64 B"), (4096, .binary, "4 KiB"), (65_536, .binary, "64 KiB"),
                             (65_536, .text, "64 KiB text (UTF-8 checked)")] where wanted("decode") {
    let stream = maskedFrames(payloadSize: size, opcode: opcode, totalBytes: 8 << 20)
    var reader = WebSocketReader(maxMessageBytes: 1 << 20)
    var messages = 0
    let (runs, seconds) = measure(batch: 1) {
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + 65_536)  // as a socket read would hand them over
            reader.feed(stream[offset..<end])
            offset = end
            while case .message = reader.next() { messages &+= 1 }
        }
    }
    report("decode masked \(label) frames", Double(runs * stream.count) / seconds / 1e6, "MB/s", goal: size == 65_536 ? 1000 : nil)
}

// MARK: WebSocket frame encoding

let event = Array(#"{"type":"event","group_id":"6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b","seq":1234,"event":"message.created","data":{}}"#.utf8)
if wanted("encode") {
    var out: [UInt8] = []
    out.reserveCapacity(1 << 20)
    let (frames, seconds) = measure(batch: 100_000) {
        if out.count > (1 << 20) - 256 { out.removeAll(keepingCapacity: true) }
        WebSocketFrameEncoder.encode(.text, payload: event, into: &out)
    }
    report("\(event.count)-byte text frames encoded", Double(frames) / seconds, "frames/s", goal: 5_000_000)
}
// MARK: UUID text (every query parameter, row, event and notice holds some)

if wanted("uuid") {
    let ids = (0..<64).map { _ in UUID() }
    let texts = ids.map(\.lowercasedText)
    var index = 0
    var (count, seconds) = measure(batch: 100_000) {
        parsedBodies &+= ids[index & 63].lowercasedText.utf8.count
        index &+= 1
    }
    report("UUIDs written (lowercasedText)", Double(count) / seconds, "ids/s", goal: nil)
    (count, seconds) = measure(batch: 100_000) {
        parsedBodies &+= ids[index & 63].uuidString.lowercased().utf8.count
        index &+= 1
    }
    report("UUIDs written (Foundation, lower-cased)", Double(count) / seconds, "ids/s", goal: nil)
    (count, seconds) = measure(batch: 100_000) {
        parsedBodies &+= UUID(text: texts[index & 63]) == nil ? 0 : 1
        index &+= 1
    }
    report("UUIDs read (UUID(text:))", Double(count) / seconds, "ids/s", goal: nil)
    (count, seconds) = measure(batch: 100_000) {
        parsedBodies &+= UUID(uuidString: texts[index & 63]) == nil ? 0 : 1
        index &+= 1
    }
    report("UUIDs read (Foundation)", Double(count) / seconds, "ids/s", goal: nil)
}

// MARK: Request bodies (every POST and PATCH decodes one)

if wanted("json") {
    struct PostBody: Decodable {
        let clientMsgId: String
        let text: String
        let kind: String?
        let severity: String?
        let location: Location?
        struct Location: Decodable {
            let lat: Double
            let lon: Double
            let accuracyM: Double?
            enum CodingKeys: String, CodingKey { case lat, lon, accuracyM = "accuracy_m" }
        }
        enum CodingKeys: String, CodingKey { case clientMsgId = "client_msg_id", text, kind, severity, location }
    }
    let body = Array(#"{"client_msg_id":"5f0c1a2e-0d3b-4c1e-9a56-1c2d3e4f5a6b","text":"Suspicious van on Elm St, heading north →","kind":"alert","severity":"amber","location":{"lat":51.5072,"lon":-0.1276,"accuracy_m":12}}"#.utf8)
    var (count, seconds) = measure(batch: 10_000) {
        parsedBodies &+= (try? JSONBodyDecoder().decode(PostBody.self, from: body))?.text.utf8.count ?? 0
    }
    report("\(body.count)-byte post bodies decoded (JSONBodyDecoder)", Double(count) / seconds, "bodies/s", goal: nil)
    (count, seconds) = measure(batch: 10_000) {
        parsedBodies &+= (try? JSONDecoder().decode(PostBody.self, from: Data(body)))?.text.utf8.count ?? 0
    }
    report("\(body.count)-byte post bodies decoded (Foundation)", Double(count) / seconds, "bodies/s", goal: nil)
}

// Printed so the optimiser cannot drop the work that produced them.
print("(checksum \(parsedBodies))")

// MARK: Web Push encryption (issue #55's floor)

// What each push costs that no batching can share: RFC 8291's ECDH with a fresh key, HKDF and
// AES-128-GCM of a notification-sized payload, to one subscription. Pushes per CPU-second if
// nothing else were done; the delivery benchmark (scripts/bench-delivery) sets Roost beside it.
if wanted("webpush") {
    do {
        let receiver = try P256Key.generate()
        let auth = Secrets.randomBytes(16)
        let payload = Array(#"{"body":"ann: Fire at number 9","group_id":"6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b","seq":42,"template":"alert","title":"RED alert in Fire Lane"}"#.utf8)
        var bytes = 0
        let (pushes, seconds) = measure(batch: 100) {
            bytes &+= (try? WebPushEncryption.encrypt(payload, p256dh: receiver.publicPoint, auth: auth).count) ?? 0
        }
        report("Web Push payloads encrypted (RFC 8291)", Double(pushes) / seconds, "push/s", goal: nil)
        let signer = try P256Key.generate()
        let (tokens, tokenSeconds) = measure(batch: 100) {
            bytes &+= (try? VAPID.authorization(audience: "https://push.example.org", subject: "mailto:a@example.org",
                                                expires: Date(), key: signer).count) ?? 0
        }
        report("VAPID tokens signed (ES256), were one signed a push", Double(tokens) / tokenSeconds, "token/s", goal: nil)
        if bytes == 0 { print("(nothing encrypted)") }
    } catch {
        print("webpush: \(error)")
    }
}

// MARK: CAP warnings (issue #60)

// A warning publisher's document as real ones are (a 40-point polygon, description and
// instruction), read from bytes to a CAPAlert: what a feed poll costs per document, beside the
// poll's wait (docs/OPERATIONS.md: the interval decides the latency, not the reading). Then
// whether a group's area meets it, per group.
if wanted("cap") {
    let ring = (0..<40).map { index -> String in
        let angle = Double(index) / 40 * 2 * .pi
        return String(format: "%.4f,%.4f", 55.68 + 0.05 * sin(angle), 12.57 + 0.08 * cos(angle))
    }
    let document = Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>2.49.0.1.578.0.20261128.1</identifier>
        <sender>noreply@met.example</sender><sent>2026-11-28T09:00:00+01:00</sent><status>Actual</status><msgType>Alert</msgType>
        <scope>Public</scope><info><language>en-GB</language><category>Met</category><event>Storm surge</event><urgency>Expected</urgency>
        <severity>Severe</severity><certainty>Likely</certainty><expires>2026-11-29T09:00:00+01:00</expires><senderName>Met Office</senderName>
        <headline>Storm surge along the harbour tonight</headline><description>Water levels 1.5 m above normal are expected from 22:00 \
        along the harbour front and the canals; waves may wash over quays.</description><instruction>Keep away from quays. Move cars \
        parked by the water to higher ground.</instruction><web>https://met.example/warnings/1</web><area><areaDesc>Harbour and canals</areaDesc>
        <polygon>\(ring.joined(separator: " ")) \(ring[0])</polygon></area></info></alert>
        """.utf8)
    var read = 0
    let (documents, seconds) = measure(batch: 500) {
        if let alert = try? CAPAlert.read(document) { read &+= alert.infos.count }
    }
    report("CAP documents (\(document.count) bytes, 40-point polygon) read", Double(documents) / seconds, "doc/s", goal: nil)
    if let shape = (try? CAPAlert.read(document))?.infos.first?.areas.first?.shapes.first {
        let street = GeoArea.circle(center: Location(lat: 55.676, lon: 12.568), radiusMeters: 500)
        var met = 0
        let (checks, checkSeconds) = measure(batch: 10_000) { if shape.intersects(street) { met &+= 1 } }
        report("groups' areas checked against a warning's", Double(checks) / checkSeconds, "check/s", goal: nil)
        if met == 0 || read == 0 { print("(nothing met)") }
    }
}

import Foundation
import RoostProtocol
import RoostTestSupport
import Testing

/// The inter-node notice codec: every notice survives a round trip, the payloads are the bytes
/// nodes have always exchanged, and anything else reads as nil, never as a wrong notice.
struct NodeNoticeTests {
    let tenant = UUID(uuidString: "0B6F2C1E-57F4-4D0B-9E21-5A8C0D3B7E10")!
    let group = UUID(uuidString: "7D1E4C2A-9B3F-4A61-8C05-2E6B9F0A1D34")!
    let user = UUID(uuidString: "C3A9E1F0-2B4D-4E6F-8A1C-5D7B9E0F2A46")!

    @Test func payloadsAreTheFormatsNodesExchange() {
        let t = tenant.uuidString.lowercased(), g = group.uuidString.lowercased(), u = user.uuidString.lowercased()
        #expect(NodeNotice.event(.init(tenant: tenant, group: group, seq: 7)).payload == "\(t)/\(g)/7")
        #expect(NodeNotice.event(.init(tenant: tenant, group: group, seq: 7, subject: user, frame: "{}")).payload == "\(t)/\(g)/7/\(u)\n{}")
        #expect(NodeNotice.groupDeleted(tenant: tenant, group: group).payload == "g/\(t)/\(g)")
        #expect(NodeNotice.sessionEnded(tenant: tenant, user: user, tokenHash: "ab12").payload == "s/\(t)/\(u)/ab12")
        // An older node's, without the user.
        #expect(NodeNotice.sessionEnded(tenant: tenant, user: nil, tokenHash: "ab12").payload == "s/\(t)/ab12")
        #expect(NodeNotice.accountEnded(tenant: tenant, user: user).payload == "u/\(t)/\(u)")
        #expect(NodeNotice.userNotice(tenant: tenant, user: user, frame: "{\"a\":1}").payload == "n/\(t)/\(u)\n{\"a\":1}")
        #expect(NodeNotice.groupNotice(tenant: tenant, group: group, frame: "{\"a\":1}").payload == "m/\(t)/\(g)\n{\"a\":1}")
        #expect(NodeNotice(payload: "m/\(t)/\(g)") == nil, "a group notice without its frame is not one")
        // Hidden from one user (a duress alert's walker): a fifth part, the fourth empty without a subject.
        #expect(NodeNotice.event(.init(tenant: tenant, group: group, seq: 7, hiddenFrom: user)).payload == "\(t)/\(g)/7//\(u)")
        #expect(NodeNotice.event(.init(tenant: tenant, group: group, seq: 7, subject: group, hiddenFrom: user)).payload == "\(t)/\(g)/7/\(g)/\(u)")
        #expect(NodeNotice.groupNotice(tenant: tenant, group: group, hiddenFrom: user, frame: "{}").payload == "m/\(t)/\(g)/\(u)\n{}")
        // For the managers only: a sixth part, the managers' ids (maybe none).
        let m = Audience.managersOnly.uuidString.lowercased()
        #expect(NodeNotice.event(.init(tenant: tenant, group: group, seq: 7, hiddenFrom: Audience.managersOnly, audience: [user, group])).payload
                == "\(t)/\(g)/7//\(m)/\(u),\(g)")
        #expect(NodeNotice.groupNotice(tenant: tenant, group: group, hiddenFrom: Audience.managersOnly, audience: [], frame: "{}").payload
                == "m/\(t)/\(g)/\(m)/\n{}")
    }

    @Test func everyNoticeSurvivesARoundTrip() {
        let event = StreamEvent(group: group, seq: 12, event: .memberJoined, at: "2026-11-23T00:00:00.000Z", data: "{\"user_id\":\"x\"}")
        let notices: [NodeNotice] = [
            .event(.init(tenant: tenant, group: group, seq: 1)),
            .event(.init(tenant: tenant, group: group, seq: Int64.max, subject: user)),
            .event(.init(tenant: tenant, group: group, seq: 12, subject: user, frame: event.frameJSON)),
            .groupDeleted(tenant: tenant, group: group),
            .sessionEnded(tenant: tenant, user: user, tokenHash: String(repeating: "0f", count: 32)),
            .sessionEnded(tenant: tenant, user: nil, tokenHash: String(repeating: "0f", count: 32)),
            .accountEnded(tenant: tenant, user: user),
            .userNotice(tenant: tenant, user: user, frame: "{\"type\":\"notice\",\"data\":\"a/b\\nc\"}"),
            .groupNotice(tenant: tenant, group: group, frame: "{\"type\":\"notice\",\"event\":\"location.updated\",\"data\":{}}"),
            .event(.init(tenant: tenant, group: group, seq: 13, hiddenFrom: user, frame: "{}")),
            .event(.init(tenant: tenant, group: group, seq: 14, subject: tenant, hiddenFrom: user)),
            .groupNotice(tenant: tenant, group: group, hiddenFrom: user, frame: "{}"),
            .event(.init(tenant: tenant, group: group, seq: 15, hiddenFrom: Audience.managersOnly, audience: [user, tenant], frame: "{}")),
            .event(.init(tenant: tenant, group: group, seq: 16, subject: user, hiddenFrom: Audience.managersOnly, audience: [])),
            .groupNotice(tenant: tenant, group: group, hiddenFrom: Audience.managersOnly, audience: [user], frame: "{}"),
        ]
        for notice in notices { #expect(NodeNotice(payload: notice.payload) == notice) }
        guard case .event(let decoded)? = NodeNotice(payload: notices[2].payload) else { return }
        #expect(decoded.kind == .memberJoined)
    }

    @Test func aFrameTooBigForANoticeIsLeftOut() {
        let big = "{\"data\":\"" + String(repeating: "x", count: NodeNotice.maxBytes) + "\"}"
        let notice = NodeNotice.event(.init(tenant: tenant, group: group, seq: 3, frame: big))
        #expect(notice.payload.utf8.count < NodeNotice.maxBytes)
        #expect(NodeNotice(payload: notice.payload) == .event(.init(tenant: tenant, group: group, seq: 3)))
    }

    @Test(arguments: ["", "\n{}", "x/y", "g/\(UUID())", "g/not-a-uuid/\(UUID())", "s/\(UUID())/", "s/\(UUID())/XYZ", "s/\(UUID())/\(UUID())/", "s/\(UUID())/not-a-user/ab12",
                      "s/\(UUID())/\(UUID())/ab12/more",
                      "u/\(UUID())/\(UUID())/extra", "n/\(UUID())/\(UUID())", "\(UUID())/\(UUID())/0", "\(UUID())/\(UUID())/-1",
                      "\(UUID())/\(UUID())/+5", "\(UUID())/\(UUID())/99999999999999999999", "\(UUID())/\(UUID())/1/not-a-user",
                      "\(UUID())/\(UUID())/1/\(UUID())/more", "g/\(UUID())/\(UUID())\n{}", "\(UUID())/\(UUID())/1//",
                      "\(UUID())/\(UUID())/1//not-a-user", "\(UUID())/\(UUID())/1/\(UUID())/\(UUID())/x", "m/\(UUID())/\(UUID())/x\n{}",
                      // An audience goes with the managers' id only, and holds ids only.
                      "\(UUID())/\(UUID())/1//\(UUID())/\(UUID())", "\(UUID())/\(UUID())/1//\(Audience.managersOnly.uuidString.lowercased())/x",
                      "m/\(UUID())/\(UUID())/\(UUID())/x\n{}"])
    func anythingElseIsNotANotice(payload: String) {
        #expect(NodeNotice(payload: payload) == nil)
    }

    @Test func randomBytesNeverCrashAndWhatDecodesEncodesBack() {
        var random = SeededGenerator(seed: 0x5EED)
        let alphabet = Array("0123456789abcdef-/gsnu\n{}".utf8) + Array(tenant.uuidString.lowercased().utf8)
        for _ in 0..<20_000 {
            let length = Int(random.next() % 120)
            let bytes = (0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let text = String(decoding: bytes, as: UTF8.self)
            if let notice = NodeNotice(payload: text) { #expect(NodeNotice(payload: notice.payload) == notice) }
        }
    }
}

/// The stream's client frame.
struct StreamClientFrameTests {
    @Test func aGroupSpeltTwiceIsReplayedOnceFromTheLowerCursor() {
        // Found by Fuzz/StreamClientFrame: the same id in upper and lower case named a group twice.
        let text = #"{"type":"resume","cursors":{"0B6F2C1E-57F4-4D0B-9E21-5A8C0D3B7E10":3,"0b6f2c1e-57f4-4d0b-9e21-5a8c0d3b7e10":0}}"#
        #expect(StreamClientFrame.parse(text) == .success(.resume([(UUID(uuidString: "0b6f2c1e-57f4-4d0b-9e21-5a8c0d3b7e10")!, Int64(0))])))
    }

    @Test(arguments: ["[]", #"{"type":"hello"}"#, #"{"type":"resume"}"#, #"{"type":"resume","cursors":{"x":1}}"#,
                      #"{"type":"resume","cursors":{"0b6f2c1e-57f4-4d0b-9e21-5a8c0d3b7e10":-1}}"#])
    func badFramesAreRefusedWithACode(text: String) {
        guard case .failure(let refusal) = StreamClientFrame.parse(text) else {
            Issue.record("accepted \(text)")
            return
        }
        #expect(["invalid_json", "unknown_type", "validation_failed"].contains(refusal.code.text))
    }
}

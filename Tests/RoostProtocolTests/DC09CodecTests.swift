import Foundation
import RoostProtocol
import Testing

/// The SIA DC-09 codec against frames from outside Roost: a Pyronix Enforcer's link test and the
/// answer NiftyDC09 gave it (home-assistant/core#180511, captured with tcpdump), frames from
/// public pysiaalarm issue threads (Ajax, Lupus, SATEL, Dahua), frames made by the `dc09-spt`
/// dialler (PyPI 0.0.4; its plain frames: its encryption does not run on Python 3), and
/// encrypted frames made with Python's `cryptography` AES-CBC at each key size, as the standard
/// lays them out (padding, `|`, data, timestamp). The receiver over real sockets is issue #59's.
struct DC09CodecTests {
    static func frame(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func at(_ text: String) -> Date { DC09Testing.date(text) }
    static func noKey(_ identity: DC09.Identity) -> [UInt8]? { nil }

    @Test func aPyronixLinkTestIsReadAndAnsweredAsNiftyDC09AnswersIt() throws {
        let null = try DC09.read(Self.frame("\nEA740027\"NULL\"0000L0#1409[]_20:38:07,08-27-2026\r"), now: Self.at("20:38:09,08-27-2026"), key: Self.noKey)
        #expect(null.header.token == .null && null.header.sequence == "0000" && null.header.receiver == nil)
        #expect(null.header.line == "0" && null.header.account == "1409" && null.data.isEmpty && null.timestamp == Self.at("20:38:07,08-27-2026"))
        #expect(try DC09Event.events(in: null).isEmpty)
        // No receiver number sent, none answered (pysiaalarm's "None" in its place was the bug).
        #expect(String(decoding: DC09Reply.ack(null.header, key: nil, now: Date()), as: UTF8.self) == "\n59890012\"ACK\"0000L0#1409[]\r")
    }

    @Test func framesFromPanelsInTheFieldAreReadWithTheirEvents() throws {
        let ajax = try DC09.read(Self.frame("\n53350022\"SIA-DCS\"0001L0#AAA[#AAA|Nri0/ZY0]\r"), now: Date(), key: Self.noKey)
        #expect(try DC09Event.events(in: ajax) == [DC09Event(code: "ZY", qualifier: nil, zone: "0", area: "0")])
        // Lowercase hex in the length field, a time and date before the code (Lupus).
        let lupus = try DC09.read(Self.frame("\n9B3C004d\"SIA-DCS\"0047L0#100200[#100200|Nti10:01:00/da08-18-24/RP]_10:01:00,08-18-2024\r"),
                                  now: Self.at("10:01:10,08-18-2024"), key: Self.noKey)
        #expect(try DC09Event.events(in: lupus) == [DC09Event(code: "RP", qualifier: nil, zone: nil, area: nil)])
        // SATEL's partition modifier, and an account in the block other than the frame's.
        let satel = try DC09.read(Self.frame("\nD8910037\"SIA-DCS\"0097L0#ABCD[#0000|Npi0/AT]_11:26:04,03-01-2026\r"),
                                  now: Self.at("11:26:05,03-01-2026"), key: Self.noKey)
        #expect(satel.header.account == "ABCD")
        #expect(try DC09Event.events(in: satel) == [DC09Event(code: "AT", qualifier: nil, zone: nil, area: "0")])
        // dc09-spt's frames: a receiver number, Contact ID new and restore, its poll.
        let burglary = try DC09.read(Self.frame("\nDEFB0029\"ADM-CID\"0007RCL3#5678[#5678|1130 01 015]\r"), now: Date(), key: Self.noKey)
        #expect(burglary.header.receiver == "C" && burglary.header.line == "3")
        #expect(try DC09Event.events(in: burglary) == [DC09Event(code: "130", qualifier: "1", zone: "015", area: "01")])
        let restore = try DC09.read(Self.frame("\n12420029\"ADM-CID\"0008RCL3#5678[#5678|3130 01 015]\r"), now: Date(), key: Self.noKey)
        #expect(try DC09Event.events(in: restore).first?.qualifier == "3")
        let sia = try DC09.read(Self.frame("\n4D550020\"SIA-DCS\"0001L0#1234[#1234|NBA1]\r"), now: Date(), key: Self.noKey)
        #expect(try DC09Event.events(in: sia) == [DC09Event(code: "BA", qualifier: nil, zone: "1", area: nil)])
        #expect(try DC09.read(Self.frame("\n6EB00015\"NULL\"0000RCL3#5678[]\r"), now: Date(), key: Self.noKey).header.token == .null)
        // Several events in one message, names between carets, and extensions (position, a verification URL).
        let body = "\"SIA-DCS\"0003R1L1#9413[#9413|Nri2/BA004^Hall^/BA005/OP001][X012.5683][Y55.6761][Vhttps://cam.example/clip/7]"
        let several = try DC09.read(DC09Testing.framed(body), now: Date(), key: Self.noKey)
        #expect(try DC09Event.events(in: several).map(\.code) == ["BA", "BA", "OP"])
        #expect(several.extensions.map(\.kind) == ["X", "Y", "V"] && several.extensions.last?.value == "https://cam.example/clip/7")
    }

    @Test func encryptedFramesAtEachKeySizeAreReadAndAnsweredEncrypted() throws {
        let now = Self.at("18:00:05,11-28-2026")
        let frames = [
            (16, "\nA20F0076\"*SIA-DCS\"0042L0#1234[223A489FE3161F6009ADDB4943DF42E9130360B0CBB69755B788A4C75CF3A5EC78290469AB2FBEC199F9553B76B019EC\r"),
            (24, "\nC19B0076\"*SIA-DCS\"0042L0#1234[148A1A0DB7E6C73DE60715519E1CD27EF565A46A8373362286A4CC99227886EE83FD7EF3366418A6B0957E1B50295DC8\r"),
            (32, "\n88710076\"*SIA-DCS\"0042L0#1234[CA1E491643772F138AED7678F113A780F4931BD9583F907509ECF28F1E4DE59ECFCC3DC12A5CF1D78CC4C615B22D6720\r"),
        ]
        for (size, text) in frames {
            let key = (0..<UInt8(size)).map { $0 }
            let read = try DC09.read(Self.frame(text), now: now) { $0.account == "1234" ? key : nil }
            #expect(read.header.encrypted && read.data == "#1234|Nri1/BA003" && read.timestamp == Self.at("18:00:00,11-28-2026"), "\(size)")
            #expect(try DC09Event.events(in: read) == [DC09Event(code: "BA", qualifier: nil, zone: "003", area: "1")])
        }
        let key = (0..<UInt8(16)).map { $0 }
        let null = try DC09.read(Self.frame("\n9BD70053\"*NULL\"0043L0#1234[A0E1FA0DD29BD4C85F0D33BAC5C06A4686771A8F7987D7BC3BB6EC71DC98EC9E\r"),
                                 now: now) { _ in key }
        #expect(null.header.token == .null && null.data.isEmpty)
        let cid = try DC09.read(Self.frame("\n974B0076\"*ADM-CID\"0044L0#1234[F41E687FFD5DC18C4E9B65AE929D3579ECDBE31E73BE65FA8A3517123B3306091C8B3DBF187CC1A5D6017CD5BF7D397A\r"),
                                now: now) { _ in (0..<UInt8(32)).map { $0 } }
        #expect(try DC09Event.events(in: cid) == [DC09Event(code: "121", qualifier: "1", zone: "005", area: "01")])
        // The encrypted ACK, its padding fixed: the bytes Python's cryptography makes of the same plaintext.
        let read = try DC09.read(Self.frame(frames[0].1), now: now) { _ in key }
        let ack = DC09Reply.ack(read.header, key: key, now: now) { Array("AbCdEfGhIjKlMnOpQ".utf8.prefix($0)) }
        #expect(String(decoding: ack, as: UTF8.self)
                == "\n1AF90052\"*ACK\"0042L0#1234[A0E1FA0DD29BD4C85F0D33BAC5C06A46D482A5AAED408FA26ED1F0AEAC511010\r")
    }

    @Test func aWrongKeyABadCRCAStaleTimestampAndNonsenseAreEachRefusedWithTheirReply() throws {
        let now = Self.at("18:01:00,11-28-2026")
        let encrypted = Self.frame("\nA20F0076\"*SIA-DCS\"0042L0#1234[223A489FE3161F6009ADDB4943DF42E9130360B0CBB69755B788A4C75CF3A5EC78290469AB2FBEC199F9553B76B019EC\r")
        // The wrong key (or none): DUH, echoing what was readable.
        for key in [nil, (0..<UInt8(16)).map { $0 &+ 1 }] as [[UInt8]?] {
            #expect(throws: DC09.Refusal.self) { try DC09.read(encrypted, now: now) { _ in key } }
            do {
                _ = try DC09.read(encrypted, now: now) { _ in key }
            } catch {
                guard case .undecryptable(let header) = error else { Issue.record("\(error)"); continue }
                #expect(String(decoding: DC09Reply.duh(header), as: UTF8.self) == "\n1AFA0012\"DUH\"0042L0#1234[]\r")
            }
        }
        // Sent at 18:00:00, read at 18:01:00: past the 40 s window. NAK, with the receiver's time.
        #expect(throws: DC09.Refusal.stale(Self.at("18:00:00,11-28-2026"))) {
            try DC09.read(encrypted, now: now) { _ in (0..<UInt8(16)).map { $0 } }
        }
        #expect(String(decoding: DC09Reply.nak(now: now), as: UTF8.self) == "\nB3FA0025\"NAK\"0000R0L0#0[]_18:01:00,11-28-2026\r")
        // 20 s ahead is the limit the other way.
        #expect(throws: DC09.Refusal.stale(Self.at("18:00:00,11-28-2026"))) {
            try DC09.read(encrypted, now: Self.at("17:59:39,11-28-2026")) { _ in (0..<UInt8(16)).map { $0 } }
        }
        // A damaged CRC, a wrong length, no framing, an unknown ID, bytes past the limit.
        for (text, why) in [("\nEA750027\"NULL\"0000L0#1409[]_20:38:07,08-27-2026\r", "bad CRC"),
                            ("\nEA740028\"NULL\"0000L0#1409[]_20:38:07,08-27-2026\r", "the length field does not match the message")] {
            #expect(throws: DC09.Refusal.corrupt(why)) { try DC09.read(Self.frame(text), now: Self.at("20:38:07,08-27-2026"), key: Self.noKey) }
        }
        #expect(throws: DC09.Refusal.self) { try DC09.read(Array("EA740027\"NULL\"0000L0#1409[]".utf8), now: now, key: Self.noKey) }
        #expect(throws: DC09.Refusal.unsupported("the ID HELLO")) { try DC09.read(DC09Testing.framed("\"HELLO\"0001L0#1234[]"), now: now, key: Self.noKey) }
        #expect(throws: DC09.Refusal.self) { try DC09.read([0x0A] + [UInt8](repeating: 0x41, count: 2000) + [0x0D], now: now, key: Self.noKey) }
        // A Contact ID block that is not QEEE GG ZZZ; more events than a message may hold.
        let badCID = try DC09.read(DC09Testing.framed("\"ADM-CID\"0001L0#1234[#1234|9130 01]"), now: now, key: Self.noKey)
        #expect(throws: DC09.Refusal.self) { try DC09Event.events(in: badCID) }
        let many = try DC09.read(DC09Testing.framed("\"SIA-DCS\"0001L0#1234[#1234|N" + (1...17).map { "BA\($0)" }.joined(separator: "/") + "]"),
                                 now: now, key: Self.noKey)
        #expect(throws: DC09.Refusal.self) { try DC09Event.events(in: many) }
    }

    @Test func theCRCIsCRC16ARC() {
        // CRC-16/ARC's check value over "123456789" is 0xBB3D.
        #expect(DC09.crc16(Array("123456789".utf8)) == 0xBB3D)
        #expect(DC09.crc16(Array("\"NULL\"0000L0#AAA[]".utf8)) == 0x5423)
    }
}

/// Frames and times for the tests.
enum DC09Testing {
    /// `HH:MM:SS,MM-DD-YYYY` in UTC.
    static func date(_ text: String) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let numbers = text.split(whereSeparator: { ":,-".contains($0) }).compactMap { Int($0) }
        return calendar.date(from: DateComponents(year: numbers[5], month: numbers[3], day: numbers[4], hour: numbers[0], minute: numbers[1],
                                                  second: numbers[2]))!
    }

    /// A body framed with its CRC and length (for frames written here rather than captured).
    static func framed(_ body: String) -> [UInt8] {
        let bytes = Array(body.utf8)
        return [0x0A] + Array(String(format: "%04X%04X", DC09.crc16(bytes), bytes.count).utf8) + bytes + [0x0D]
    }
}

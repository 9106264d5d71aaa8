import Foundation
@testable import RoostProtocol
import Testing

struct SMTPReplyReaderTests {
    func replies(_ text: String, pieces: Int) throws -> [SMTPReply] {
        var reader = SMTPReplyReader()
        var found: [SMTPReply] = []
        let bytes = Array(text.utf8)
        for start in stride(from: 0, to: bytes.count, by: pieces) {
            reader.feed(bytes[start..<min(bytes.count, start + pieces)])
            while let reply = try reader.next() { found.append(reply) }
        }
        return found
    }

    @Test(arguments: [1, 2, 5, 1000])
    func multilineAndSingleLineRepliesInAnyPieces(pieces: Int) throws {
        let found = try replies("220 mail.example.org ESMTP ready\r\n250-mail.example.org\r\n250-STARTTLS\r\n250 SIZE 1000\r\n354\r\n", pieces: pieces)
        #expect(found == [
            SMTPReply(code: 220, lines: ["mail.example.org ESMTP ready"]),
            SMTPReply(code: 250, lines: ["mail.example.org", "STARTTLS", "SIZE 1000"]),
            SMTPReply(code: 354, lines: [""]),
        ])
        #expect(found[1].isPositive && !found[1].isTransient)
    }

    @Test func classesAndSummary() throws {
        let busy = try #require(try replies("451-4.3.0 Mailbox busy,\n451 try again later\n", pieces: 100).first)
        #expect(busy.isTransient && !busy.isPermanent && busy.summary == "451 4.3.0 Mailbox busy, try again later")
        #expect(try replies("550 5.1.1 No such mailbox\r\n", pieces: 100).first?.isPermanent == true)
    }

    @Test(arguments: ["25 short\r\n", "abc nope\r\n", "250-a\r\n251 b\r\n", "250xtext\r\n", "650 out of range\r\n", "\r\n"])
    func malformedLinesAreRefused(text: String) {
        #expect(throws: SMTPReplyReader.Failure.self) { _ = try replies(text, pieces: 3) }
    }

    @Test func limitsHold() {
        #expect(throws: SMTPReplyReader.Failure.lineTooLong) { _ = try replies("250 " + String(repeating: "x", count: 3000), pieces: 512) }
        #expect(throws: SMTPReplyReader.Failure.tooManyLines) { _ = try replies(String(repeating: "250-x\r\n", count: 200), pieces: 64) }
    }
}

struct MailMessageTests {
    let message = MailMessage(from: MailAddress("Roost Nabohjælp <noreply@roost.example>")!, to: "ann@example.org",
                              subject: "Rød alarm i Æblevej\r\nBcc: evil@example.org", text: ".leading dot\nline two\n.", html: "<p>x</p>",
                              date: Date(timeIntervalSince1970: 1_795_462_911), messageID: "abc", boundary: "=_b")

    @Test func headersAreEncodedAndCannotBeInjected() {
        let text = String(decoding: message.rendered(), as: UTF8.self)
        let headers = text.components(separatedBy: "\r\n\r\n")[0]
        #expect(headers.contains("From: =?UTF-8?B?"))
        #expect(headers.contains("Subject: =?UTF-8?B?"))
        #expect(!headers.contains("\r\nBcc:"), "the subject's CRLF is gone before encoding")
        #expect(headers.contains("Date: Mon, 23 Nov 2026 19:41:51 +0000"))
        #expect(headers.contains("Message-ID: <abc@roost.example>"))
        #expect(headers.contains("Content-Type: multipart/alternative; boundary=\"=_b\""))
    }

    @Test func encodedWordsSplitBetweenCharactersAndStayShort() throws {
        let words = MailMessage.encodedWords(String(repeating: "æøå🚨", count: 20)).components(separatedBy: "\r\n ")
        #expect(words.count > 1)
        var decoded = Data()
        for word in words {
            #expect(word.count <= 75)
            let inner = word.dropFirst("=?UTF-8?B?".count).dropLast(2)
            decoded += try #require(Data(base64Encoded: String(inner)))
            #expect(String(data: try #require(Data(base64Encoded: String(inner))), encoding: .utf8) != nil, "every word is whole UTF-8")
        }
        #expect(String(decoding: decoded, as: UTF8.self) == String(repeating: "æøå🚨", count: 20))
    }

    @Test func dotStuffingDoublesLeadingDotsAndEndsTheData() {
        #expect(String(decoding: MailMessage.dotStuffed(Array(".a\nb\r\n..c\r\n.".utf8)), as: UTF8.self) == "..a\r\nb\r\n...c\r\n..\r\n.\r\n")
        #expect(String(decoding: MailMessage.dotStuffed(Array("x\r\n".utf8)), as: UTF8.self) == "x\r\n.\r\n")
    }

    @Test func addresses() {
        #expect(MailAddress("noreply@example.org") == MailAddress("noreply@example.org"))
        #expect(MailAddress("\"Roost\" <a@b.example>")?.name == "Roost")
        for bad in ["", "no-at", "a@b@c", "a b@c.example", "<a@b.example", "x <a@b.example>\r\nBcc: y", "a@b.example>"] {
            #expect(MailAddress(bad) == nil, "\(bad)")
        }
    }
}

struct TextTemplateTests {
    @Test func valuesSectionsAndEscaping() throws {
        let data: [String: Any] = ["name": "Ann & <Bo>", "alert": ["text": "Smoke", "location": ["lat": 55.5]], "none": NSNull(), "zero": 0, "yes": true]
        let plain = try TextTemplate("Hi {{name}}: {{alert.text}}{{#alert.location}} at {{alert.location.lat}}{{/alert.location}}"
                                     + "{{#none}}X{{/none}}{{^none}}-{{/none}}{{#zero}}Z{{/zero}}{{#yes}}Y{{/yes}}{{missing.path}}.")
        #expect(plain.render(data) == "Hi Ann & <Bo>: Smoke at 55.5-Y.")
        #expect(try TextTemplate("<b>{{name}}</b>", escapesHTML: true).render(data) == "<b>Ann &amp; &lt;Bo&gt;</b>")
    }

    @Test func brokenTemplatesAreRefused() {
        #expect(throws: TextTemplate.Failure.unclosed("a")) { _ = try TextTemplate("{{#a}}x") }
        #expect(throws: TextTemplate.Failure.unexpectedClose("b")) { _ = try TextTemplate("{{#a}}x{{/b}}") }
        #expect(throws: TextTemplate.Failure.unterminatedTag) { _ = try TextTemplate("{{a") }
    }
}

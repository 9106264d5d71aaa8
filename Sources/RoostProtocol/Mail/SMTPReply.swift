/// One reply of an SMTP server (RFC 5321 §4.2): a three-digit code and its text lines.
/// `250-first` lines continue a reply, `250 last` ends it.
public struct SMTPReply: Sendable, Equatable {
    public let code: Int
    public let lines: [String]

    public init(code: Int, lines: [String]) {
        self.code = code
        self.lines = lines
    }

    /// 2xx and 3xx: go on.
    public var isPositive: Bool { (200..<400).contains(code) }
    /// 4xx: try again later.
    public var isTransient: Bool { (400..<500).contains(code) }
    /// 5xx: the server will never take it.
    public var isPermanent: Bool { code >= 500 }

    /// The code and the text, one line, for logs and `last_error`.
    public var summary: String { "\(code) " + lines.joined(separator: " ").trimmingCharacters(in: .whitespaces) }
}

/// Reads SMTP replies from bytes as they arrive, with limits a hostile or broken server cannot
/// pass: a line is at most 2,048 bytes (RFC 5321 allows 512), a reply at most 128 lines; the
/// code must be three digits 2–5, 0–5, 0–9, the same on every line, followed by `-`, space or
/// the line's end. Lines end with CRLF (a bare LF is accepted). Text is decoded as UTF-8 with
/// replacement characters.
public struct SMTPReplyReader: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case lineTooLong
        case tooManyLines
        case malformed(String)

        public var description: String {
            switch self {
            case .lineTooLong: "the SMTP server sent a reply line over 2048 bytes"
            case .tooManyLines: "the SMTP server sent a reply of over 128 lines"
            case .malformed(let line): "the SMTP server sent a malformed reply line: \(line.prefix(80))"
            }
        }
    }

    public static let maxLineBytes = 2048
    public static let maxLines = 128

    private var buffer: [UInt8] = []
    private var code: Int?
    private var lines: [String] = []

    public init() {}

    /// Bytes read but not yet part of a reply.
    public var bufferedCount: Int { buffer.count }

    /// Adds bytes read from the server.
    public mutating func feed(_ bytes: some Collection<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete reply, nil when more bytes are needed.
    public mutating func next() throws(Failure) -> SMTPReply? {
        while let newline = buffer.firstIndex(of: 10) {
            guard newline <= Self.maxLineBytes else { throw .lineTooLong }
            var line = Array(buffer[0..<newline])
            buffer.removeFirst(newline + 1)
            if line.last == 13 { line.removeLast() }
            if let reply = try take(line) { return reply }
        }
        guard buffer.count <= Self.maxLineBytes else { throw .lineTooLong }
        return nil
    }

    private mutating func take(_ line: [UInt8]) throws(Failure) -> SMTPReply? {
        let text = String(decoding: line, as: UTF8.self)
        guard line.count >= 3,
              (50...53).contains(line[0]), (48...53).contains(line[1]), (48...57).contains(line[2]),
              line.count == 3 || line[3] == 45 || line[3] == 32 else { throw .malformed(text) }
        let lineCode = Int(line[0] - 48) * 100 + Int(line[1] - 48) * 10 + Int(line[2] - 48)
        if let code, code != lineCode { throw .malformed(text) }
        code = lineCode
        lines.append(line.count > 4 ? String(decoding: line[4...], as: UTF8.self) : "")
        guard lines.count <= Self.maxLines else { throw .tooManyLines }
        guard line.count > 3, line[3] == 45 else {
            defer { code = nil; lines = [] }
            return SMTPReply(code: lineCode, lines: lines)
        }
        return nil
    }
}

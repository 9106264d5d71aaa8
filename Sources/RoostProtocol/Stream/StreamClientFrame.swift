import Foundation

/// A frame a stream client sends (API.md "The stream"). There is one:
/// `{"type":"resume","cursors":{"<group id>": <last seq seen>, ...}}`.
public enum StreamClientFrame: Equatable, Sendable {
    case resume([(UUID, Int64)])

    /// Why a frame was refused: the `error` frame's `code` and `message`.
    public struct Refusal: Error, Equatable, Sendable {
        public let code: APIError.Code
        public let message: String
    }

    /// Reads a text frame; the cursors come sorted by group id (a stable replay order), each
    /// group once (one spelt twice, in two cases, keeps the lower cursor: replaying more is safe).
    public static func parse(_ text: String) -> Result<StreamClientFrame, Refusal> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            return .failure(Refusal(code: .invalidJSON, message: "frames must be JSON objects"))
        }
        guard object["type"] as? String == "resume" else {
            return .failure(Refusal(code: .unknownType, message: "the only client frame is {\"type\":\"resume\",\"cursors\":{...}}"))
        }
        guard let raw = object["cursors"] as? [String: Any] else {
            return .failure(Refusal(code: .validationFailed, message: "resume needs cursors: {\"<group id>\": <last seq seen>}"))
        }
        var cursors: [UUID: Int64] = [:]
        for (key, value) in raw {
            guard let group = UUID(text: key), let seq = value as? Int, seq >= 0 else {
                return .failure(Refusal(code: .validationFailed, message: "each cursor is a group id and a whole seq ≥ 0"))
            }
            cursors[group] = min(cursors[group] ?? Int64(seq), Int64(seq))
        }
        return .success(.resume(cursors.map { ($0.key, $0.value) }.sorted { $0.0.uuidString < $1.0.uuidString }))
    }

    public static func == (lhs: StreamClientFrame, rhs: StreamClientFrame) -> Bool {
        switch (lhs, rhs) {
        case (.resume(let a), .resume(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        }
    }
}

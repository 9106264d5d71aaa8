/// Why a request could not be parsed. Every case maps to exactly one status code; after any
/// of them the connection is answered and closed, since the byte stream can no longer be
/// trusted to frame the next request.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case malformedRequestLine
        case invalidMethod
        case invalidTarget
        case unsupportedVersion
        case requestLineTooLong
        case malformedHeader
        case obsoleteLineFolding
        case headersTooLarge
        case bareLineFeed
        case invalidContentLength
        case conflictingContentLength
        case contentLengthWithTransferEncoding
        case unsupportedTransferEncoding
        case malformedChunk
        case bodyTooLarge
    }

    public let reason: Reason
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var status: HTTPStatus {
        switch reason {
        case .requestLineTooLong: return .uriTooLong
        case .headersTooLarge: return .headersTooLarge
        case .bodyTooLarge: return .payloadTooLarge
        case .unsupportedVersion: return .httpVersionNotSupported
        default: return .badRequest
        }
    }

    /// The API error body for this failure (API.md "Conventions").
    public var apiError: APIError {
        switch reason {
        case .requestLineTooLong: return APIError(.uriTooLong, code: .uriTooLong, message: detail)
        case .headersTooLarge: return APIError(.headersTooLarge, code: .headersTooLarge, message: detail)
        case .bodyTooLarge: return APIError(.payloadTooLarge, code: .payloadTooLarge, message: detail)
        case .unsupportedVersion:
            return APIError(.httpVersionNotSupported, code: .httpVersionNotSupported, message: detail)
        default: return APIError(.badRequest, code: .badRequest, message: detail)
        }
    }

    public var description: String { "\(status.code): \(detail)" }
}

import Dispatch
import RoostProtocol

#if canImport(Glibc)
import Glibc
#endif

/// How Roost reaches servers outside: the one policy every request goes through, and the
/// resolver that turns a host name into the addresses the policy then judges one by one.
public struct OutboundNetwork: Sendable {
    public var policy = OutboundPolicy()
    public var resolver = OutboundResolver.system

    public init() {}
}

/// Host name to addresses: `getaddrinfo(3)`, or what a test answers (a hosts entry of its own,
/// so a name can be made to lead to a listener on this machine).
public struct OutboundResolver: Sendable {
    public struct Answer: Sendable, Equatable {
        public let address: IPAddress
        public let port: Int

        public init(address: IPAddress, port: Int) {
            self.address = address
            self.port = port
        }
    }

    public let resolve: @Sendable (_ host: String, _ port: Int) throws(OutboundFailure) -> [Answer]

    public init(_ resolve: @escaping @Sendable (_ host: String, _ port: Int) throws(OutboundFailure) -> [Answer]) {
        self.resolve = resolve
    }

    /// The system's resolver, for TCP; blocks, so it runs on the delivery threads (or off the
    /// cooperative pool, `resolveDetached`).
    public static let system = OutboundResolver { host, port throws(OutboundFailure) in
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, result != nil else { throw OutboundFailure("cannot resolve \(host)") }
        defer { freeaddrinfo(result) }
        var answers: [Answer] = []
        var next = result
        while let entry = next {
            next = entry.pointee.ai_next
            guard let raw = entry.pointee.ai_addr else { continue }
            switch Int32(raw.pointee.sa_family) {
            case AF_INET:
                let v4 = UnsafeRawPointer(raw).load(as: sockaddr_in.self)
                let bytes = withUnsafeBytes(of: v4.sin_addr) { Array($0) }
                answers.append(Answer(address: IPAddress(bytes: bytes)!, port: Int(UInt16(bigEndian: v4.sin_port))))
            case AF_INET6:
                let v6 = UnsafeRawPointer(raw).load(as: sockaddr_in6.self)
                let bytes = withUnsafeBytes(of: v6.sin6_addr) { Array($0) }
                answers.append(Answer(address: IPAddress(bytes: bytes)!, port: Int(UInt16(bigEndian: v6.sin6_port))))
            default: continue
            }
        }
        guard !answers.isEmpty else { throw OutboundFailure("cannot resolve \(host)") }
        return answers
    }
}

extension OutboundNetwork {
    /// The addresses `url` leads to, each one admitted by the policy; throws a refusal when any
    /// is not (a name that mixes public and private addresses is refused whole).
    func addresses(of url: OutboundURL) throws(OutboundFailure) -> [OutboundResolver.Answer] {
        let answers: [OutboundResolver.Answer] = switch url.host {
        case .address(let address): [.init(address: address, port: url.port)]
        case .name(let name): try resolver.resolve(name, url.port)
        }
        for answer in answers {
            if let refusal = policy.refusal(of: answer.address, for: url) { throw OutboundFailure(refusal) }
        }
        return answers
    }

    /// `addresses(of:)` off Swift's cooperative threads: for a request handler that checks an
    /// endpoint as it is registered.
    func addressesDetached(of url: OutboundURL) async throws(OutboundFailure) -> [OutboundResolver.Answer] {
        let result: Result<[OutboundResolver.Answer], OutboundFailure> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(OutboundFailure) in try addresses(of: url) })
            }
        }
        return try result.get()
    }
}

/// What went wrong talking to a server outside: the text lands in the outbox row's
/// `last_error` (and `roost outbox list --failed`). A refusal by the outbound policy is final,
/// as is an answer over its size bound: no retry changes it (`isRefusal`).
public struct OutboundFailure: Error, CustomStringConvertible {
    public let description: String
    public let isRefusal: Bool

    public init(_ description: String) {
        self.description = description
        isRefusal = false
    }

    init(_ refusal: OutboundRefusal) {
        description = "refused by the outbound policy: \(refusal)"
        isRefusal = true
    }

    /// A failure no retry changes that the policy did not make (an answer over its size bound).
    init(final description: String) {
        self.description = description
        isRefusal = true
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: its name and errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// What a non-blocking call returned: a value, or "would block" (EAGAIN), which is not an error.
enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

/// Runs a system call the way every call in the reactor is run: retried on EINTR, EAGAIN
/// reported as `.wouldBlock`, EBADF trapped (a closed descriptor used again is a bug here,
/// never input from outside), anything else thrown with errno and the call's name.
@inline(__always)
func systemCall<Value: BinaryInteger>(_ name: @autoclosure () -> String, _ body: () -> Value) throws(SystemError) -> IOResult<Value> {
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let code = errno
        switch code {
        case EINTR: continue
        case EAGAIN: return .wouldBlock
        case EBADF: preconditionFailure("\(name()) on a closed file descriptor")
        default: throw SystemError(call: name(), errno: code)
        }
    }
}

/// A call that must not block (setup calls): "would block" there is itself an error.
@discardableResult
func mustSucceed<Value: BinaryInteger>(_ name: @autoclosure () -> String, _ body: () -> Value) throws(SystemError) -> Value {
    switch try systemCall(name(), body) {
    case .done(let value): return value
    case .wouldBlock: throw SystemError(call: name(), errno: EAGAIN)
    }
}

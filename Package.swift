// swift-tools-version:6.0
// Roost: a multi-tenant neighbourhood-watch group messaging server.
// No Swift package dependencies: the toolchain plus libpq, libcrypto and libssl only.
import PackageDescription

let package = Package(
    name: "Roost",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "roost", targets: ["roost"]),
    ],
    targets: [
        // System C libraries, each a thin module map over the Debian -dev headers.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The outbound TLS client of email and Web Push (delivery only; inbound TLS is in front of Roost).
        .systemLibrary(
            name: "CTLS",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // Header-only shim: epoll, eventfd and timerfd are not exported by Glibc's overlay.
        .systemLibrary(name: "CLinuxEvents"),

        // The floors (docs/ARCHITECTURE.md): roost -> RoostServer -> {RoostHTTP, RoostFanout,
        // RoostPersistence} -> RoostProtocol. The transport, the fanout and persistence never
        // import each other; RoostServer wires them together.
        .target(
            name: "RoostProtocol",
            dependencies: ["CCrypto"]
        ),
        .target(
            name: "RoostHTTP",
            dependencies: ["RoostProtocol", "CLinuxEvents"]
        ),
        .target(
            name: "RoostPersistence",
            dependencies: ["RoostProtocol", "CLibPQ", "CCrypto"]
        ),
        .target(
            name: "RoostFanout",
            dependencies: ["RoostProtocol"]
        ),
        .target(
            name: "RoostServer",
            dependencies: ["RoostHTTP", "RoostFanout", "RoostPersistence", "RoostProtocol", "CCrypto", "CTLS", "CLinuxEvents"]
        ),
        .executableTarget(
            name: "roost",
            dependencies: ["RoostServer", "RoostHTTP", "RoostProtocol"]
        ),
        // The system benchmark: drives a running server from outside with an epoll client loop.
        .executableTarget(
            name: "roost-bench",
            dependencies: ["RoostServer", "RoostHTTP", "RoostPersistence", "RoostProtocol", "CLinuxEvents"],
            path: "Benchmarks/RoostBench"
        ),
        // Micro-benchmark of the codecs (release build; prints figures, asserts nothing).
        .executableTarget(
            name: "roost-protocol-bench",
            dependencies: ["RoostProtocol"],
            path: "Benchmarks/ProtocolBench"
        ),

        // Helpers the database-backed tests share: the throwaway database, scratch clusters, subprocesses.
        .target(name: "RoostTestSupport", dependencies: ["RoostPersistence", "RoostProtocol"], path: "Tests/RoostTestSupport"),
        .testTarget(name: "RoostProtocolTests", dependencies: ["RoostProtocol", "RoostTestSupport"]),
        .testTarget(name: "RoostHTTPTests", dependencies: ["RoostHTTP", "RoostProtocol", "RoostTestSupport"]),
        .testTarget(name: "RoostPersistenceTests", dependencies: ["RoostPersistence", "RoostTestSupport"]),
        .testTarget(name: "RoostFanoutTests", dependencies: ["RoostFanout", "RoostProtocol", "RoostTestSupport"]),
        .testTarget(name: "RoostServerTests", dependencies: ["RoostServer", "RoostHTTP", "RoostTestSupport"]),
        .testTarget(name: "EndToEndTests", dependencies: ["RoostServer", "RoostHTTP", "RoostTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

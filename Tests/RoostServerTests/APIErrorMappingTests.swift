import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// The application's one mapping from its errors to the API's (`APIError.mapping`), as the
/// transport applies it to any route: a database that is away is 503 with Retry-After, never a 500.
struct APIErrorMappingTests {
    @Test func aDatabaseFailureInAnyRouteIs503NotA500() async throws {
        let test = try TestServer(extraRoutes: { builder in
            builder.add(.get, "/db-down") { _ in
                // A closed pool fails like an unreachable database, with no mapping in the route.
                let pool = ConnectionPool(configuration: .init(connectionString: "postgresql:///none?host=/nonexistent"))
                pool.close()
                try await pool.query("SELECT 1")
                return HTTPResponse(status: .ok)
            }
        })
        let client = try TestClient(port: test.port)
        client.send("GET /db-down HTTP/1.1\r\n\r\n")
        let response = try #require(await client.readResponse())
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "1")
        #expect(response.text.contains(#""code":"unavailable""#))
        await test.stop()
    }
}

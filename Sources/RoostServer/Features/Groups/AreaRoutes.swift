import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// Where a watch group watches (issue #60): its owner and admins set a polygon or a circle,
/// every member reads it, and a group without one has its tenant's default (set by the
/// operator, `TenantRoutes`). Official warnings reach the groups whose area theirs meets.
struct AreaRoutes: Sendable {
    let auth: Authentication

    /// `{"area": ..., "source": "group" | "tenant" | null}`: the area the group watches, and
    /// whether it is its own or its tenant's default.
    static func view(own: String?, tenantDefault: String?) -> HTTPResponse {
        let (area, source) = own.map { ($0, "\"group\"") } ?? tenantDefault.map { ($0, "\"tenant\"") } ?? ("null", "null")
        return .json(.ok, Array("{\"area\":\(area),\"source\":\(source)}".utf8))
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/groups/{gid:uuid}/area", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let (own, tenantDefault) = try await caller.inGroup(group) { _, connection in
                try GroupStore().area(of: group, on: connection) ?? (nil, nil)
            }
            return Self.view(own: own, tenantDefault: tenantDefault)
        }
        builder.add(.put, "/v1/groups/{gid:uuid}/area", bodyLimit: 32 * 1024, signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let area = try context.decodeJSON(AreaBody.self).validated()
            let tenantDefault = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins set the group's area")
                try GroupStore().setArea(of: group, to: area.jsonText, on: connection)
                try Audit.record(caller, group: group, .groupAreaChanged, target: ("group", group.lowercasedText),
                                 data: "{\"kind\":\"\(area.pointCount > 0 ? "polygon" : "circle")\",\"points\":\(area.pointCount)}", on: connection)
                return try GroupStore().area(of: group, on: connection)?.tenantDefault
            }
            return Self.view(own: area.jsonText, tenantDefault: tenantDefault)
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/area", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let tenantDefault = try await caller.inGroup(group) { caller, connection in
                try caller.requireManager("only the owner and admins set the group's area")
                try GroupStore().setArea(of: group, to: nil, on: connection)
                try Audit.record(caller, group: group, .groupAreaChanged, target: ("group", group.lowercasedText), data: "{\"kind\":null}",
                                 on: connection)
                return try GroupStore().area(of: group, on: connection)?.tenantDefault
            }
            return Self.view(own: nil, tenantDefault: tenantDefault)
        }
    }
}

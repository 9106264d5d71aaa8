import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// A group's alerts as CAP 1.2 (issue #60, API.md "Group areas and CAP"), for the systems a
/// municipality or a security company already runs: `GET .../cap.atom` lists each change of the
/// group's alerts as an entry of its own (raised: Alert; answered, escalated, repeated,
/// reopened: Update; closed: Cancel with the resolution), never editing an old one, and
/// `GET .../alerts/{seq}/cap.xml` is an alert's latest. Read with the group's feed token, which
/// the owner makes, replaces and removes. Scope Restricted; a place is a circle coarsened to
/// 200 m, never a member's exact home; an alert hidden from anyone, redacted, or an official
/// warning taken in is never published.
struct CAPOutRoutes: Sendable {
    let auth: Authentication
    /// `ROOST_PUBLIC_URL`: the documents' sender (its host) and their links; without it the
    /// request's Host.
    let publicURL: String?

    static let entriesPerFeed = 50
    static let noSuchFeed = APIError(.notFound, code: .notFound, message: "no such feed: the group has no CAP token, or this is not it")

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups/{gid:uuid}/cap-token", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let token = "cap_" + Secrets.base64URL(Secrets.randomBytes(32))
            try await caller.inGroup(group) { caller, connection in
                try caller.requireOwner("only the owner hands out the group's CAP feed")
                try CAPOutStore().setToken(Digest.sha256(Array(token.utf8)), tenant: caller.user.tenantID, group: group, on: connection)
                try Audit.record(caller, group: group, .groupCAPTokenChanged, target: ("group", group.lowercasedText), data: "{\"token\":\"new\"}",
                                 on: connection)
            }
            let base = base(context)
            let body = "{\"token\":\(JSONString.quote(token)),\"atom_url\":\(JSONString.quote("\(base)/v1/groups/\(group.lowercasedText)/cap.atom?token=\(token)"))}"
            return .json(.created, Array(body.utf8))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}/cap-token", signedIn: auth) { context, caller in
            let group = context.parameters.uuid("gid")!
            let removed = try await caller.inGroup(group) { caller, connection -> Bool in
                try caller.requireOwner("only the owner hands out the group's CAP feed")
                guard try CAPOutStore().removeToken(tenant: caller.user.tenantID, group: group, on: connection) else { return false }
                try Audit.record(caller, group: group, .groupCAPTokenChanged, target: ("group", group.lowercasedText), data: "{\"token\":null}",
                                 on: connection)
                return true
            }
            guard removed else { throw Self.noSuchFeed }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/cap.atom") { context in
            let group = context.parameters.uuid("gid")!
            let token = context.request.target.queryValue("token") ?? ""
            let (about, changes) = try await read(group, token: token, alert: nil, limit: Self.entriesPerFeed)
            let base = base(context)
            let link = { (seq: Int64) in "\(base)/v1/groups/\(group.lowercasedText)/alerts/\(seq)/cap.xml?token=\(token)" }
            let entries = changes.map { CAPWriter.Entry(message: message($0, about: about, group: group, context: context), link: link($0.alertSeq)) }
            let atom = CAPWriter.atom(id: "urn:roost:\(about.tenantSlug):\(group.lowercasedText)", title: "\(about.name): alerts", author: about.tenantName,
                                      selfLink: "\(base)/v1/groups/\(group.lowercasedText)/cap.atom?token=\(token)",
                                      updated: changes.first?.at ?? Date(timeIntervalSince1970: 0), entries: entries)
            return Self.document(atom, type: "application/atom+xml; charset=utf-8")
        }
        builder.add(.get, "/v1/groups/{gid:uuid}/alerts/{seq:int}/cap.xml") { context in
            let group = context.parameters.uuid("gid")!
            let seq = context.parameters.int("seq")!
            let token = context.request.target.queryValue("token") ?? ""
            let (about, changes) = try await read(group, token: token, alert: seq, limit: 1)
            guard let latest = changes.first else { throw APIError.noSuchAlert }
            return Self.document(CAPWriter.alert(message(latest, about: about, group: group, context: context)), type: "application/cap+xml; charset=utf-8")
        }
    }

    static func document(_ text: String, type: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Content-Type", type)
        headers.add("Cache-Control", "no-store")
        return HTTPResponse(status: .ok, headers: headers, body: Array(text.utf8))
    }

    /// The group and its latest changes, when `token` is the group's.
    private func read(_ group: UUID, token: String, alert: Int64?, limit: Int) async throws -> (CAPGroup, [CAPChange]) {
        guard token.hasPrefix("cap_"), token.utf8.count <= 100 else { throw Self.noSuchFeed }
        let hash = Digest.sha256(Array(token.utf8))
        return try await auth.pool.withConnection { connection in
            guard let tenant = try CAPOutStore().tenant(ofToken: hash, group: group, on: connection) else { throw Self.noSuchFeed }
            return try connection.withTenantTransaction(tenant) { connection in
                guard let about = try CAPOutStore().group(group, on: connection) else { throw Self.noSuchFeed }
                return (about, try CAPOutStore().changes(group: group, alert: alert, limit: limit, on: connection))
            }
        }
    }

    /// `https://host` of `ROOST_PUBLIC_URL`, else of the request.
    private func base(_ context: RequestContext) -> String {
        if let publicURL { return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL }
        return "http://\(Self.host(context.request.headers["host"]))"
    }

    /// CAP's sender: the host Roost answers as (letters, digits, dots, hyphens and a port only).
    private func sender(_ context: RequestContext) -> String {
        if let publicURL, let host = URL(string: publicURL)?.host { return host }
        return Self.host(context.request.headers["host"])
    }

    static func host(_ header: String?) -> String {
        let kept = (header ?? "").filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":") }
        return kept.isEmpty || kept.count > 253 ? "roost.invalid" : kept
    }

    /// One change as a CAP message.
    private func message(_ change: CAPChange, about: CAPGroup, group: UUID, context: RequestContext) -> CAPMessage {
        let raised = (try? JSONSerialization.jsonObject(with: Data(change.raised.utf8))) as? [String: Any] ?? [:]
        let data = (try? JSONSerialization.jsonObject(with: Data(change.data.utf8))) as? [String: Any] ?? [:]
        let text = raised["text"] as? String ?? ""
        let severity = (raised["alert"] as? [String: Any])?["severity"] as? String ?? AlertSeverity.amber.name
        let sender = sender(context)
        let first = "urn:roost:\(about.tenantSlug):\(group.lowercasedText):\(change.alertSeq)"
        let (msgType, note): (String, String?) = switch change.event {
        case .messageCreated: ("Alert", nil)
        case .alertClosed: ("Cancel", "Closed" + ((data["resolution"] as? String).map { ": " + $0 } ?? ""))
        case .alertAcknowledged: ("Update", "A member answered: " + ((data["response"] as? String) ?? "seen").replacingOccurrences(of: "_", with: " "))
        case .alertEscalated: ("Update", "Escalated to level \(data["level"] as? Int ?? 1): nobody said they are on their way")
        case .alertRepeated: ("Update", "Raised again (\(data["repeat_count"] as? Int ?? 1) repeats)")
        default: ("Update", "Reopened")
        }
        let place = CAPPlace(location: raised["location"] as? [String: Any], groupArea: about.areaJSON)
        let info = CAPMessage.Info(
            language: about.locale, category: "Security", event: "Neighbourhood watch alert",
            urgency: msgType == "Cancel" ? "Past" : "Immediate",
            severity: severity == AlertSeverity.red.name ? "Severe" : severity == AlertSeverity.amber.name ? "Moderate" : "Minor",
            certainty: change.authorType == .user ? "Observed" : "Likely", senderName: about.name,
            headline: String((text.split(separator: "\n", omittingEmptySubsequences: true).first ?? "").prefix(160)), description: text,
            web: publicURL.map { _ in base(context) + "/" }, areaDescription: place.description, circles: place.circles, polygons: place.polygons)
        return CAPMessage(identifier: change.event == .messageCreated ? first : "\(first):\(change.eventSeq)", sender: sender, sent: change.at,
                          status: about.drill ? "Exercise" : "Actual", msgType: msgType,
                          restriction: "For the members of \(about.name) and the partners they share this feed with", note: note,
                          references: change.event == .messageCreated ? [] : [(sender, first, change.raisedAt)], info: info)
    }
}

/// Where an alert is, as its CAP document says it: the alert's place coarsened to a 200 m
/// circle (never the spot itself: it may be someone's home), else the group's area, else nowhere.
struct CAPPlace: Equatable {
    let description: String
    let circles: [String]
    let polygons: [String]

    static let cellMeters = 200.0

    init(location: [String: Any]?, groupArea: String?) {
        if let lat = location?["lat"] as? Double, let lon = location?["lon"] as? Double {
            let centre = Self.coarsened(Location(lat: lat, lon: lon))
            description = "Within 200 m of here"
            circles = [String(format: "%.4f,%.4f 0.2", centre.lat, centre.lon)]
            polygons = []
        } else if let groupArea, let area = try? JSONDecoder().decode(GeoArea.self, from: Data(groupArea.utf8)) {
            description = "The group's area"
            switch area {
            case .circle(let center, let radius):
                circles = [String(format: "%.5f,%.5f %.3f", center.lat, center.lon, radius / 1000)]
                polygons = []
            case .polygon(let ring):
                let points = ring.points + [ring.points[0]]
                polygons = [points.map { String(format: "%.5f,%.5f", $0.lat, $0.lon) }.joined(separator: " ")]
                circles = []
            }
        } else {
            (description, circles, polygons) = ("", [], [])
        }
    }

    /// The centre of the 200 m cell `point` is in: anyone reading it learns the cell, not the spot.
    static func coarsened(_ point: Location) -> Location {
        let latStep = cellMeters / 111_320
        let lat = ((point.lat / latStep).rounded(.down) + 0.5) * latStep
        let lonStep = cellMeters / (111_320 * max(0.01, cos(lat * .pi / 180)))
        let lon = ((point.lon / lonStep).rounded(.down) + 0.5) * lonStep
        return Location(lat: min(90, max(-90, lat)), lon: min(180, max(-180, lon)))
    }
}

import Foundation
import Testing
@testable import RoostServer
import RoostPersistence
import RoostProtocol
import RoostTestSupport

/// The use cases alone: each is given a caller and a transaction, with no HTTP, no router and
/// no token, against the real database (its row security on). What the routes add (decoding,
/// authentication, status codes) is tested through the API elsewhere.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct UseCaseTests {
    /// A tenant with a group: its owner, an admin and a member, as callers.
    struct Street {
        let connection: PostgresConnection
        let tenant: UUID
        let group: UUID
        let owner: GroupCaller
        let admin: GroupCaller
        let member: GroupCaller

        init() throws {
            connection = try TestDatabase.migratedConnection()
            let slug = "uc-\(UUID().uuidString.prefix(8).lowercased())"
            let tenant = try TenantStore().create(slug: slug, name: "Use Case Lane", registration: .open, on: connection).id
            self.tenant = tenant
            (group, owner, admin, member) = try connection.withTenantTransaction(tenant) { connection in
                let users = try ["Ada", "Ben", "Cy"].map { name in
                    try UserStore().create(tenant: tenant, email: "\(name.lowercased())@\(slug).example", phone: nil, passwordHash: "x",
                                           displayName: name, on: connection)
                }
                let group = try GroupStore().create(tenant: tenant, owner: users[0].id, name: "Elm Street", description: "", on: connection).id
                for (user, role) in [(users[1], Role.admin), (users[2], Role.member)] {
                    try connection.query("""
                        INSERT INTO memberships (tenant_id, group_id, user_id, role) VALUES (\(tenant), \(group), \(user.id), \(role.name))
                        """)
                }
                return (group, GroupCaller(user: users[0], role: .owner), GroupCaller(user: users[1], role: .admin),
                        GroupCaller(user: users[2], role: .member))
            }
        }

        /// `useCase` run by `caller` in one transaction of the tenant, as `SignedIn.run` does after its checks.
        func run<UseCase: GroupUseCase>(_ useCase: UseCase, by caller: GroupCaller) throws -> UseCase.Output {
            try connection.withTenantTransaction(tenant) { try useCase.run(by: caller, on: $0) }
        }

        func events() throws -> [StreamEvent] {
            try connection.withTenantTransaction(tenant) { try GroupEventLog().streamEvents(group: group, after: 0, limit: 200, on: $0) }
        }
    }

    func post(_ street: Street, _ clientID: String, kind: MessageKind = .chat, text: String = "Bins are out") throws -> PostMessage {
        try PostMessage(group: street.group, clientMessageID: clientID, kind: kind, text: text, severity: nil, template: nil, location: nil,
                        replyTo: nil, alertsPerHour: 10)
    }

    /// A field of a message's JSON (the store's text and jsonb's differ in spacing, not in content).
    func field(_ json: String?, _ path: String...) -> String? {
        guard let json, var value = try? JSONSerialization.jsonObject(with: Data(json.utf8)) else { return nil }
        for key in path { value = (value as? [String: Any])?[key] as Any }
        return value as? String
    }

    func apiError(_ body: () throws -> Void) -> APIError? {
        do { try body() } catch let error as APIError { return error } catch { return nil }
        return nil
    }

    @Test func inputIsValidatedWhenTheUseCaseIsMadeBeforeAnyTransaction() {
        let group = UUID()
        let refusals: [(APIError?, String)] = [
            (apiError { _ = try PostMessage(group: group, clientMessageID: "a", kind: MessageKind("poll"), text: "x", severity: nil, template: nil,
                                            location: nil, replyTo: nil, alertsPerHour: 1) }, "kind"),
            (apiError { _ = try PostMessage(group: group, clientMessageID: "", kind: .chat, text: "x", severity: nil, template: nil,
                                            location: nil, replyTo: nil, alertsPerHour: 1) }, "client_msg_id"),
            (apiError { _ = try PostMessage(group: group, clientMessageID: "a", kind: .chat, text: "x", severity: "red", template: nil,
                                            location: nil, replyTo: nil, alertsPerHour: 1) }, "severity"),
            (apiError { _ = try PostMessage(group: group, clientMessageID: "a", kind: .alert, text: " \n ", severity: nil, template: nil,
                                            location: nil, replyTo: nil, alertsPerHour: 1) }, "text"),
            (apiError { _ = try PostMessage(group: group, clientMessageID: "a", kind: .chat, text: "x", severity: nil, template: nil,
                                            location: Location(lat: 91, lon: 0), replyTo: nil, alertsPerHour: 1) }, "location.lat"),
            (apiError { _ = try AcknowledgeAlert(group: group, seq: 1, response: "maybe", note: nil) }, "response"),
            (apiError { _ = try ChangeRole(group: group, member: UUID(), role: "owner") }, "role"),
            (apiError { _ = try InviteMember(group: group, email: "a@b.example", phone: "+4512345678", role: nil, lifetime: 60,
                                             limits: AbuseLimits()) }, "email"),
            (apiError { _ = try ReplaceTemplates(group: group, templates: [MessageTemplate(key: "Bad Key", text: "x", kind: .chat, severity: nil)]) },
             "templates.0.key"),
        ]
        for (error, field) in refusals {
            #expect(error?.status == .badRequest && error?.field == field, "\(field): \(String(describing: error))")
        }
    }

    @Test func aRepeatedClientMessageIDPostsNothingNewAndFindsTheFirstMessage() throws {
        let street = try Street()
        let chat = try post(street, "walk-1")
        let first = try street.run(chat, by: street.member)
        #expect(first.created)
        // A chat repeat fails the unique key (the route then runs `repeated`); an alert repeat answers at once.
        #expect(throws: DatabaseError.self) { try street.run(chat, by: street.member) }
        let found = try street.run(chat.repeated, by: street.member)
        #expect(field(found, "id") != nil && field(found, "id") == field(first.json, "id"))
        #expect(try street.run(chat.repeated, by: street.admin) == nil, "another author's client_msg_id names nothing")
        let alert = try post(street, "siren-1", kind: .alert, text: "Smoke at no. 4")
        let raised = try street.run(alert, by: street.member)
        let again = try street.run(alert, by: street.member)
        #expect(raised.created && !again.created && field(again.json, "id") == field(raised.json, "id"))
        #expect(try street.events().map(\.event) == [.memberJoined, .messageCreated, .messageCreated])
    }

    /// A post's answer and its event's data are built before the rows are read back (the seq
    /// and time filled in by the statement that writes them): they must say what a later read
    /// of the tables says, for a chat line, a red alert with a place and a reply.
    @Test func aPostAnswersWithTheMessageItsTablesAndItsEventShow() throws {
        let street = try Street()
        let hostile = "Gate \"open\" at no. 4 $1 '); DROP TABLE messages; -- \u{1F6A8}\n\u{2028}é"
        let posts = [
            try post(street, "chat-1", text: hostile),
            try PostMessage(group: street.group, clientMessageID: "alert-1", kind: .alert, text: "Smoke", severity: "red", template: nil,
                            location: Location(lat: 51.5, lon: -0.125, accuracyM: 12), replyTo: nil, alertsPerHour: 10),
            try PostMessage(group: street.group, clientMessageID: "reply-1", kind: .chat, text: "On my way", severity: nil, template: nil,
                            location: nil, replyTo: 3, alertsPerHour: 10),
        ]
        func object(_ json: String?) -> NSDictionary? {
            json.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? NSDictionary }
        }
        var answers: [String] = []
        for (message, author) in zip(posts, [street.member, street.member, street.admin]) {
            answers.append(try street.run(message, by: author).json)
        }
        let events = try street.events().filter { $0.event == .messageCreated }
        #expect(events.count == 3)
        for (answer, event) in zip(answers, events) {
            let stored = try street.connection.withTenantTransaction(street.tenant) {
                try MessageStore().message(group: street.group, seq: event.seq, on: $0)
            }
            #expect(object(answer) != nil && object(answer) == object(stored), "answer \(answer) against the tables' \(stored ?? "nothing")")
            // Bound first: comparing `object(event.data)` inside #expect crashed in the debug build
            // (a bad pointer in NSObject.==) once StreamEvent gained `subject`; bound, it compares.
            let logged = event.data
            #expect(object(answer) == object(logged))
            #expect((object(answer)?["seq"] as? Int).map(Int64.init) == event.seq)
        }
        #expect(field(answers[0], "text") == hostile)
        #expect(field(answers[1], "alert", "severity") == "red" && field(answers[1], "alert", "status") == "open")
    }

    @Test func onlyTheAuthorAndTheManagersCloseAnAlertAndEachChangeIsOneEvent() throws {
        let street = try Street()
        let raised = try street.run(try post(street, "a-1", kind: .alert, text: "Gate left open"), by: street.member)
        let seq = try #require(street.events().last?.seq)
        let other = try street.run(try post(street, "a-2", kind: .alert, text: "Van idling"), by: street.admin)
        #expect(raised.created && other.created)
        // The member may not close the admin's alert; the owner may; closing twice conflicts.
        let adminSeq = seq + 1
        #expect(apiError { _ = try street.run(try CloseAlert(group: street.group, seq: adminSeq, resolution: nil), by: street.member) }?.status == .forbidden)
        let closed = try street.run(try CloseAlert(group: street.group, seq: adminSeq, resolution: "  Driver left  "), by: street.owner)
        #expect(field(closed, "alert", "status") == "closed" && field(closed, "alert", "resolution") == "Driver left")
        #expect(apiError { _ = try street.run(try CloseAlert(group: street.group, seq: adminSeq, resolution: nil), by: street.admin) }?.status == .conflict)
        // The author closes and reopens their own.
        _ = try street.run(try CloseAlert(group: street.group, seq: seq, resolution: nil), by: street.member)
        let reopened = try street.run(ReopenAlert(group: street.group, seq: seq), by: street.member)
        #expect(field(reopened, "alert", "status") == "open")
        #expect(apiError { _ = try street.run(ReopenAlert(group: street.group, seq: seq + 100), by: street.owner) } == .noSuchAlert)
        let kinds = try street.events().map(\.event)
        #expect(kinds.filter { $0 == .alertClosed }.count == 2 && kinds.filter { $0 == .alertReopened }.count == 1, "\(kinds)")
    }

    @Test func rolesChangeOnlyByTheOwnerAndOwnershipMovesWithTwoEvents() throws {
        let street = try Street()
        let promote = try ChangeRole(group: street.group, member: street.member.user.id, role: "admin")
        #expect(apiError { _ = try street.run(promote, by: street.admin) }?.status == .forbidden)
        #expect(try street.run(promote, by: street.owner).role == Role.admin.name)
        try street.run(TransferOwnership(group: street.group, newOwner: street.admin.user.id), by: street.owner)
        let roles = try street.connection.withTenantTransaction(street.tenant) { connection in
            try [street.owner, street.admin].map { try GroupStore().role(of: $0.user.id, in: street.group, on: connection) }
        }
        #expect(roles == [.admin, .owner])
        let changes = try street.events().filter { $0.event == .memberRoleChanged }.map(\.data)
        #expect(changes.count == 3, "\(changes)")
        #expect(changes.suffix(2).map { field($0, "to") } == ["admin", "owner"], "\(changes)")
        // The owner can neither leave nor be removed.
        let leave = RemoveMember(group: street.group, member: street.admin.user.id)
        let newOwner = GroupCaller(user: street.admin.user, role: .owner)
        #expect(apiError { try street.run(leave, by: newOwner) }?.status == .conflict)
        #expect(apiError { try street.run(leave, by: street.owner) }?.status == .forbidden)
    }
}

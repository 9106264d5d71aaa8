import Foundation
import RoostProtocol
@testable import RoostServer
import Testing

/// The shipped templates and how they are found, overridden and filled in.
struct RenderedMessagesTests {
    let messages = RenderedMessages(publicURL: "https://watch.example.org/")
    let emailTemplates = ["invitation", "verification", "password_reset", "password_changed", "address_change_requested", "address_changed", "alert_digest", "bridge_digest", "registration_attempted",
                          "emergency_contact_confirm", "escalation_contact_confirm", "alert", "alert_escalated", "checkin_alert",
                          "checkin_all_clear", "bridge_offline", "bridge_online"]
    let pushTemplates = ["alert", "alert_closed", "alert_response", "checkin_prompt", "checkin_request", "checkin_request_answered",
                         "checkin_request_expired", "chat"]

    @Test func everyTemplateExistsInEveryShippedLanguageAndParses() throws {
        let shipped = try #require(RenderedMessages.shippedFolder())
        for locale in MessageLocale.shipped {
            for name in emailTemplates {
                #expect(FileManager.default.fileExists(atPath: shipped.appendingPathComponent("\(locale)/\(name).txt").path), "\(locale)/\(name).txt")
                let email = try messages.email(TemplateName(name), locale: locale, data: [:])
                #expect(!email.subject.isEmpty && !email.text.isEmpty && email.html.contains("<html"), "\(locale)/\(name)")
            }
            for name in pushTemplates {
                #expect(FileManager.default.fileExists(atPath: shipped.appendingPathComponent("\(locale)/\(name).push").path), "\(locale)/\(name).push")
                #expect(!(try messages.push(TemplateName(name), locale: locale, data: [:]).title.isEmpty), "\(locale)/\(name)")
            }
        }
    }

    @Test func anInvitationLinksToTheWebAppWithItsTokenAndTenant() throws {
        // Someone not signed in must know which community to register in (web/js/screens/join.js).
        let email = try messages.email(.invitation, locale: "en", data: ["token": "riv_abc", "tenant": "oak-street", "group_name": "North"])
        #expect(email.text.contains("https://watch.example.org/#/invitation?token=riv_abc&tenant=oak-street"))
        // It names the group and the invited address, for the app to say and fill in, encoded whatever they hold.
        let named = try messages.email(.invitation, locale: "en", data: ["token": "riv_abc", "tenant": "oak-street", "group_name": "Oak & Elm #2",
                                                                         "to": "bo+street@example.org"])
        #expect(named.text.contains("https://watch.example.org/#/invitation?token=riv_abc&tenant=oak-street&group=Oak%20%26%20Elm%20%232"
                                    + "&to=bo%2Bstreet%40example%2Eorg"))
        let without = try messages.email(.invitation, locale: "en", data: ["token": "riv_abc"])
        #expect(without.text.contains("https://watch.example.org/#/invitation?token=riv_abc") && !without.text.contains("&tenant="))
    }

    @Test func anAlertEmailCarriesGroupSeverityPlaceAndPhotoAndEscapesWhatMembersWrote() throws {
        let data: [String: Any] = ["group_name": "Elm <Row>", "alert": [
            "text": "Broken window at <b>no. 4</b>", "author": ["display_name": "Ann"], "location": ["lat": 55.68, "lon": 12.57],
            "attachments": [["id": "m1", "url": "/v1/media/m1?tenant=t&exp=1&sig=s"]], "alert": ["severity": "red"],
        ]]
        let email = try messages.email(.alert, locale: "en", data: data)
        #expect(email.subject == "RED alert in Elm <Row>")
        #expect(email.text.contains("Ann: Broken window at <b>no. 4</b>"))
        #expect(email.text.contains("https://www.openstreetmap.org/?mlat=55.68&mlon=12.57#map=17/55.68/12.57"))
        #expect(email.text.contains("Photo: https://watch.example.org/v1/media/m1?tenant=t&exp=1&sig=s"))
        #expect(email.html.contains("&lt;b&gt;no. 4&lt;/b&gt;") && !email.html.contains("<b>no. 4"), "the layout escapes the text")
        #expect(try messages.email(.alert, locale: "da", data: data).subject == "RØD alarm i Elm <Row>")
        var amber = data
        amber["alert"] = ["text": "Van", "author": ["display_name": "Bo"], "alert": ["severity": "amber"]]
        let quiet = try messages.email(.alert, locale: "en", data: amber)
        #expect(quiet.subject == "Amber alert in Elm <Row>" && !quiet.text.contains("openstreetmap") && !quiet.text.contains("Photo"))
    }

    @Test func anOperatorsFolderReplacesSingleFilesAndUnknownLocalesFallBackToEnglish() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roost-templates-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("da"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "Subject: Velkommen til {{group_name}}\n\nKode: {{token}}\n".write(to: folder.appendingPathComponent("da/invitation.txt"), atomically: true, encoding: .utf8)
        try "Subject: {{#broken}}\n".write(to: folder.appendingPathComponent("da/verification.txt"), atomically: true, encoding: .utf8)
        let custom = RenderedMessages(override: folder)
        let invitation = try custom.email(.invitation, locale: "da", data: ["group_name": "Æblevej", "token": "riv_x"])
        #expect(invitation.subject == "Velkommen til Æblevej" && invitation.text == "Kode: riv_x\n")
        #expect(invitation.html.contains("Du er inviteret"), "the shipped da/invitation.html still applies")
        #expect(try custom.email(.passwordChanged, locale: "da", data: [:]).subject == "Din Roost-adgangskode er ændret", "not overridden")
        #expect(try custom.email(.passwordChanged, locale: "fr", data: [:]).subject == "Your Roost password was changed")
        #expect(throws: RenderedMessages.Missing.self) { try custom.email(.verification, locale: "da", data: [:]) }
        #expect(throws: RenderedMessages.Missing.self) { try custom.email(TemplateName("no_such_template"), locale: "en", data: [:]) }
    }
}

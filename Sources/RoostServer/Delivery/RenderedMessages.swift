import Foundation
import RoostProtocol
import Synchronization

/// The text Roost writes itself for SMTP and Web Push (API.md "Outbound delivery"), from
/// `templates/<locale>/<template>.{txt,html,push}` (`TextTemplate`):
///
/// - `.txt`: the first line is `Subject: …`, then a blank line, then the plain-text body;
/// - `.html`: the HTML body; without one, `_layout.html` shows the text body (escaped);
/// - `.push`: the first line is the notification's title, the rest its body.
///
/// An operator's folder (`ROOST_TEMPLATES_DIR`) is searched before the shipped one, file by
/// file, so one file can be changed without copying the rest; a locale without the file falls
/// back to English. Files are read once and kept (a restart picks up edits).
final class RenderedMessages: Sendable {
    struct Email: Equatable {
        let subject: String
        let text: String
        let html: String
    }

    struct Push: Equatable {
        let title: String
        let body: String
    }

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    let folders: [URL]
    /// `ROOST_PUBLIC_URL` without its trailing slash: links in messages start with it.
    let publicURL: String?
    private let cache = Mutex<[String: TextTemplate?]>([:])

    init(override: URL? = nil, shipped: URL? = RenderedMessages.shippedFolder(), publicURL: String? = nil) {
        folders = [override, shipped].compactMap { $0 }
        self.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// The `templates/` Roost ships, where `ShippedFolder` finds it (the Docker image keeps it in
    /// /usr/share/roost/templates).
    static func shippedFolder() -> URL? {
        ShippedFolder.find("templates", marker: "en/invitation.txt")
    }

    func email(_ template: TemplateName, locale: String, data: [String: Any]) throws -> Email {
        guard let text = try load(template.name, "txt", locale: locale) else {
            throw Missing(description: "no template \(template).txt for \(locale) or en in \(folders.map(\.path))")
        }
        let context = enriched(data, template: template)
        let rendered = text.render(context)
        var lines = rendered.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.first, first.hasPrefix("Subject:") else {
            throw Missing(description: "\(template).txt must begin with a Subject: line")
        }
        let subject = first.dropFirst("Subject:".count).trimmingCharacters(in: .whitespaces)
        lines.removeFirst()
        if lines.first?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines.removeFirst() }
        let body = lines.joined(separator: "\n")
        let html: String
        if let page = try load(template.name, "html", locale: locale) {
            html = page.render(context)
        } else if let layout = try load("_layout", "html", locale: locale) {
            html = layout.render(context.merging(["subject": subject, "body": body]) { $1 })
        } else {
            html = "<pre>\(TextTemplate.escapeHTML(body))</pre>"
        }
        return Email(subject: subject, text: body, html: html)
    }

    func push(_ template: TemplateName, locale: String, data: [String: Any]) throws -> Push {
        guard let push = try load(template.name, "push", locale: locale) else {
            throw Missing(description: "no template \(template).push for \(locale) or en in \(folders.map(\.path))")
        }
        let rendered = push.render(enriched(data, template: template)).trimmingCharacters(in: .whitespacesAndNewlines)
        let title = rendered.prefix { $0 != "\n" }
        let body = rendered.dropFirst(title.count).trimmingCharacters(in: .whitespacesAndNewlines)
        return Push(title: String(title), body: body)
    }

    /// The delivery's data with what templates show but rows do not keep: the app's address and
    /// a link carrying the delivery's token (`/#/<template>?token=…&tenant=…`, where the web app takes
    /// it), a map link for an alert's place, its first photo's absolute address, and flags for
    /// its severity.
    func enriched(_ data: [String: Any], template: TemplateName) -> [String: Any] {
        var context = data
        if let publicURL {
            context["app_url"] = publicURL
            if let token = data["token"] as? String {
                let query = token.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&+=#"))) ?? token
                // The tenant's slug rides along: someone not yet signed in must know where to register.
                // An invitation's link also names its group and the address it went to, for the app
                // to say what the link does and fill the address in (the link reaches only that address).
                var hints = (data["tenant"] as? String).map { "&tenant=\($0)" } ?? ""
                if template == .tenantInvitation { hints += "&kind=tenant" }
                if template == .invitation || template == .tenantInvitation {
                    for (key, field) in [("group", "group_name"), ("to", "to")] {
                        guard let value = data[field] as? String, !value.isEmpty else { continue }
                        hints += "&\(key)=" + (value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                    }
                }
                // A tenant's invitation opens the invitation screen, which registers with its token.
                let route = template == .tenantInvitation ? "invitation" : template.name
                context["link"] = "\(publicURL)/#/\(route)?token=\(query)\(hints)"
            }
        }
        if var alert = data["alert"] as? [String: Any] ?? data["message"] as? [String: Any] {
            if let location = alert["location"] as? [String: Any], let lat = location["lat"] as? Double, let lon = location["lon"] as? Double {
                alert["map_url"] = "https://www.openstreetmap.org/?mlat=\(lat)&mlon=\(lon)#map=17/\(lat)/\(lon)"
            }
            if let first = (alert["attachments"] as? [[String: Any]])?.first, let url = first["url"] as? String {
                alert["photo_url"] = url.hasPrefix("/") ? (publicURL ?? "") + url : url
            }
            let severity = Self.severity(of: data)
            context["is_red"] = severity == "red"
            context["is_amber"] = severity == "amber"
            context[data["alert"] != nil ? "alert" : "message"] = alert
        }
        return context
    }

    /// An alert delivery's severity: its message's `alert.severity` (API.md's message shape).
    static func severity(of data: [String: Any]) -> String? {
        ((data["alert"] as? [String: Any])?["alert"] as? [String: Any])?["severity"] as? String
    }

    private func load(_ name: String, _ kind: String, locale: String) throws -> TextTemplate? {
        let key = "\(locale)/\(name).\(kind)"
        if let cached = cache.withLock({ $0[key] }) { return cached }
        var found: TextTemplate?
        search: for language in (locale == "en" ? ["en"] : [locale, "en"]) {
            for folder in folders {
                let file = folder.appendingPathComponent("\(language)/\(name).\(kind)")
                guard let source = try? String(contentsOf: file, encoding: .utf8) else { continue }
                do {
                    found = try TextTemplate(source, escapesHTML: kind == "html")
                } catch {
                    throw Missing(description: "\(file.path): \(error)")
                }
                break search
            }
        }
        cache.withLock { $0[key] = found }
        return found
    }
}

import IAPLink
import IAPSession
import IAPWire

/// A head unit's connection core whose link came up at time zero with the
/// default link parameters: what the session tests start from.
func linkedHeadUnit(authentication: AuthenticationPolicy = .required) throws -> Connection {
    let proposal = LinkParameters().synchronization
    let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
    var headUnit = Connection(.init(role: .accessory, authentication: authentication))
    _ = headUnit.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
    return headUnit
}

/// The control messages among a core's outputs.
func sent(_ outputs: [Connection.Output]) -> [ControlMessage] {
    outputs.compactMap { if case .send(_, let bytes) = $0 { try? ControlMessage(decoding: bytes) } else { nil } }
}

/// A parameter read with the catalog's type for it (or a best guess when the
/// catalog does not know it), for display and for typed access.
public struct InterpretedParameter: Hashable, Sendable {
    public var id: UInt16
    public var name: String?
    public var type: ParameterType
    public var value: ParameterValue
}

public indirect enum ParameterValue: Hashable, Sendable {
    case none
    case bool(Bool)
    case unsigned(UInt64)
    case signed(Int64)
    case enumeration(UInt8, name: String?)
    case string(String)
    case blob([UInt8])
    case messageIDs([UInt16])
    case uint64s([UInt64])
    case group([InterpretedParameter])
    /// The data does not fit the declared type; the bytes are kept.
    case invalid([UInt8], reason: String)
}

extension MessageCatalog {
    /// Reads every parameter of `message` with the catalog's types. Groups are
    /// followed to `maximumDepth` levels; deeper nesting becomes `.invalid`.
    public static func interpret(_ message: ControlMessage, maximumDepth: Int = Parameter.defaultMaximumDepth) -> [InterpretedParameter] {
        interpret(message.parameters, specs: self.message(message.id)?.parameters, depth: 1, maximumDepth: maximumDepth)
    }

    static func interpret(_ parameters: ParameterList, specs: [ParameterSpec]?, depth: Int, maximumDepth: Int) -> [InterpretedParameter] {
        parameters.map { parameter in
            let spec = specs?.first { $0.id == parameter.id }
            return interpret(parameter, spec: spec, depth: depth, maximumDepth: maximumDepth)
        }
    }

    static func interpret(_ parameter: Parameter, spec: ParameterSpec?, depth: Int, maximumDepth: Int) -> InterpretedParameter {
        let type = spec?.type ?? guessType(parameter.data)
        var result = InterpretedParameter(id: parameter.id, name: spec?.name, type: type, value: .none)
        let data = parameter.data
        func invalid(_ reason: String) -> ParameterValue { .invalid(data, reason: reason) }
        func unsigned(_ width: Int) -> ParameterValue {
            guard data.count == width else { return invalid("\(data.count) bytes, \(type.rawValue) needs \(width)") }
            return .unsigned(data.reduce(0) { $0 << 8 | UInt64($1) })
        }
        func signed(_ width: Int) -> ParameterValue {
            guard data.count == width else { return invalid("\(data.count) bytes, \(type.rawValue) needs \(width)") }
            let raw = data.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let shift = UInt64(64 - width * 8)
            return .signed(Int64(bitPattern: raw << shift) >> Int64(shift))
        }
        switch type {
        case .none:
            result.value = data.isEmpty ? .none : invalid("\(data.count) bytes in a header-only parameter")
        case .bool:
            // Some flags are sent header-only (presence means true), so an
            // empty bool reads as true, as public decoders read it.
            if data.isEmpty {
                result.value = .bool(true)
            } else {
                result.value = data.count == 1 && data[0] <= 1 ? .bool(data[0] == 1) : invalid("not a one-byte 0 or 1")
            }
        case .enumeration:
            result.value = data.count == 1 ? .enumeration(data[0], name: spec?.values[UInt64(data[0])]) : invalid("\(data.count) bytes, an enum needs 1")
        case .uint8: result.value = unsigned(1)
        case .uint16: result.value = unsigned(2)
        case .uint32: result.value = unsigned(4)
        case .uint64: result.value = unsigned(8)
        case .int8: result.value = signed(1)
        case .int16: result.value = signed(2)
        case .int32: result.value = signed(4)
        case .int64: result.value = signed(8)
        case .utf8:
            do { result.value = .string(try parameter.string()) } catch { result.value = invalid(error.detail) }
        case .blob:
            result.value = .blob(data)
        case .messageIDList:
            if data.count % 2 == 0 {
                result.value = .messageIDs(stride(from: 0, to: data.count, by: 2).map { UInt16(data[$0]) << 8 | UInt16(data[$0 + 1]) })
            } else {
                result.value = invalid("\(data.count) bytes is not a whole number of u16 ids")
            }
        case .uint64List:
            if data.count % 8 == 0 {
                result.value = .uint64s(stride(from: 0, to: data.count, by: 8).map { start in
                    data[start..<start + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                })
            } else {
                result.value = invalid("\(data.count) bytes is not a whole number of u64 ids")
            }
        case .group:
            if depth >= maximumDepth {
                result.value = invalid("groups nest deeper than \(maximumDepth) levels")
            } else {
                do {
                    let members = try parameter.group()
                    result.value = .group(interpret(members, specs: spec?.members, depth: depth + 1, maximumDepth: maximumDepth))
                } catch {
                    result.value = invalid(error.detail)
                }
            }
        }
        return result
    }

    /// A best guess for a parameter the catalog does not describe.
    static func guessType(_ data: [UInt8]) -> ParameterType {
        switch data.count {
        case 0: return .none
        case 1: return .uint8
        case 2: return .uint16
        case 4: return .uint32
        case 8: return .uint64
        default: break
        }
        if data.last == 0, let nul = data.firstIndex(of: 0), nul == data.count - 1,
           let text = String(validating: data[..<nul], as: UTF8.self),
           text.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\t" || $0 == "\n" }) {
            return .utf8
        }
        if Parameter.isParameterList(data) { return .group }
        return .blob
    }
}

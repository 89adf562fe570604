package generic

// Empty is the value Java Dubbo's ReflectUtils.getEmptyObject makes of
// javaType, in FromJSON's Go form: 0 or false for numbers and booleans
// (boxes too), "" for String, an empty list, array or map (an empty list
// for Object too: Java's test is "can an ArrayList be assigned to it"),
// nil for void and Date, and for any other class (a POJO) a map of its class and
// of the empty values of the properties props gives (its bean properties
// and their Java types, as a service definition lists them; nil: none),
// two levels deep as in Java. A bad type name is an *ArgError.
func Empty(javaType string, props func(class string) map[string]string) (any, error) {
	t, err := parseType(javaType)
	if err != nil {
		return nil, &ArgError{Msg: err.Error()}
	}
	return empty(t, props, 0), nil
}

func empty(t typeName, props func(string) map[string]string, level int) any {
	if level > 2 || t.name == "void" || t.name == "java.lang.Void" {
		return nil
	}
	if t.dims > 0 {
		v, _ := convertArray(t, []any{}, "")
		return v
	}
	k, known := conversions[t.name]
	if !known {
		m := map[any]any{ClassKey: t.name}
		if props == nil {
			return m
		}
		for name, typ := range props(t.name) {
			pt, err := parseType(typ)
			if err != nil {
				continue
			}
			if v := empty(pt, props, level+1); v != nil {
				m[name] = v
			}
		}
		return m
	}
	switch k {
	case convString:
		return ""
	case convChar:
		return "\x00"
	case convInt, convShort, convByte:
		return int32(0)
	case convLong:
		return int64(0)
	case convDouble, convFloat:
		return float64(0)
	case convBool:
		return false
	case convMap:
		return map[any]any{}
	case convList, convObject:
		return []any{}
	}
	return nil // Date
}

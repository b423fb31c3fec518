// Owns the few JSON-writing helpers the Akka peer needs (string quoting, number formatting).
// Exists because every line this peer prints or appends (micro results, lab events) is JSON and
// hand-writing it keeps the hot event path free of a serializer; parsing uses Jackson instead.
package troupe.peers.akka.common;

import java.util.Locale;

public final class Json {
    private Json() {}

    /** Appends {@code s} as a JSON string literal (with quotes) to {@code out}. */
    public static StringBuilder quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"');
    }

    /** The JSON string literal for {@code s}. */
    public static String quote(String s) {
        return quote(new StringBuilder(s.length() + 2), s).toString();
    }

    /** A finite double as a JSON number with at most 3 decimals; NaN/infinite become null. */
    public static String number(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return "null";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v) + ".0";
        }
        return String.format(Locale.ROOT, "%.3f", v);
    }
}

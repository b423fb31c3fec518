// The lab's fault schedule (schedule.jsonl, shared/spec/events.md) as the Akka peers read it:
// one action per line, in time order (stable: ties keep file order). Shared by every workload's
// injector so all of them read the file the same way.
package troupe.peers.akka.common;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

public final class Schedule {
    private Schedule() {}

    /** One planned fault. */
    public record Action(long atMs, String id, String kind, int group, int slot, boolean restart) {}

    /**
     * Reads schedule.jsonl. A malformed line is reported on stderr, counted in {@code errors}
     * and left out; the rest run.
     */
    public static List<Action> read(Path file, AtomicLong errors) throws IOException {
        ObjectMapper json = new ObjectMapper();
        List<Action> out = new ArrayList<>();
        int lineNo = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isBlank()) {
                continue;
            }
            try {
                JsonNode n = json.readTree(line);
                JsonNode id = n.get("id");
                out.add(new Action(need(n, "at_ms").asLong(),
                        id == null || id.isNull() ? "line-" + lineNo : id.asText(),
                        need(n, "kind").asText(),
                        need(n, "group").asInt(),
                        need(n, "slot").asInt(),
                        !n.has("restart") || n.get("restart").asBoolean(true)));
            } catch (IOException | IllegalArgumentException e) {
                errors.incrementAndGet();
                System.err.println("schedule " + file + ":" + lineNo + ": " + e.getMessage());
            }
        }
        out.sort(Comparator.comparingLong(Action::atMs)); // stable: ties keep file order
        return out;
    }

    private static JsonNode need(JsonNode n, String key) {
        JsonNode v = n.get(key);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException("missing key " + key);
        }
        return v;
    }
}

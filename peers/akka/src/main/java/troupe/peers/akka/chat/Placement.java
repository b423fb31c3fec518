// Owns where the node JVMs of the distributed deployment run: all on loopback, or each in the
// network namespace the lab made for it (TROUPE_NETNS), so that the lab's network faults,
// applied in a hub namespace outside every runtime, hit this peer as they hit the others
// (docs/chat.md, "The chat peer contract").
//
// Rules:
//  1. Without TROUPE_NETNS every JVM's Artery listens on and advertises 127.0.0.1 (as before).
//  2. With it, TROUPE_NETNS is the path of the lab's JSON file {"coordinator": {"netns",
//     "addr"}, "nodes": [{"index", "name", "netns", "addr"}, ...]}. Its nodes must be exactly the
//     chat's network nodes in order (server-0 .. server-{num_supervisor-1}, then clients-0 ..;
//     index = position); anything else (a missing or extra node, another order, an address that
//     is not IPv4, a namespace name that is not a plain file name) is refused, naming the file
//     and the field.
//  3. The orchestrator (the JVM the lab starts, already inside the coordinator namespace) uses
//     the coordinator's address; node `name` is started as `ip netns exec <netns> java ...` and
//     its Artery's canonical hostname (bound and advertised) is its addr; the port stays 0 (a
//     free one), as on loopback. Only the address and the command's prefix differ.
package troupe.peers.akka.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

final class Placement {
    static final String ENV_NETNS = "TROUPE_NETNS";
    private static final String LOOPBACK = "127.0.0.1";
    private static final Pattern NETNS = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]*");
    private static final Pattern IPV4 =
            Pattern.compile("(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}");

    /** A namespace and the address a node listens on there. */
    record Spot(String netns, String addr) {}

    private final Spot coordinator; // null on loopback
    private final Map<String, Spot> nodes;
    private final String ip; // the `ip` binary; null on loopback

    private Placement(Spot coordinator, Map<String, Spot> nodes, String ip) {
        this.coordinator = coordinator;
        this.nodes = nodes;
        this.ip = ip;
    }

    /** The chat's network nodes in the lab's order (its net_nodes). */
    static List<String> netNodes(ChatConfig cfg) {
        List<String> names = new ArrayList<>();
        for (int g = 0; g < cfg.numSupervisor(); g++) {
            names.add("server-" + g);
        }
        for (int g = 0; g < cfg.clientGroups().size(); g++) {
            names.add("clients-" + g);
        }
        return names;
    }

    /**
     * Reads the placement for `names`: loopback without TROUPE_NETNS (rule 1), else the file's.
     * A bad file throws IllegalArgumentException; a missing `ip` binary IllegalStateException.
     */
    static Placement load(List<String> names) {
        String path = System.getenv(ENV_NETNS);
        if (path == null || path.isEmpty()) {
            return new Placement(null, Map.of(), null);
        }
        String text;
        try {
            text = Files.readString(Path.of(path));
        } catch (IOException e) {
            throw new IllegalArgumentException(ENV_NETNS + "=" + path + ": cannot read it: " + e.getMessage());
        }
        Placement parsed;
        try {
            parsed = parse(text, names);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(ENV_NETNS + "=" + path + ": " + e.getMessage());
        }
        return new Placement(parsed.coordinator, parsed.nodes, ipBinary());
    }

    /** Parses the lab's namespace file for the nodes `names` (rule 2). */
    static Placement parse(String text, List<String> names) {
        JsonNode doc;
        try {
            doc = new ObjectMapper().readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
        }
        if (doc == null || !doc.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        Spot coordinator = spot(doc.get("coordinator"), "coordinator");
        JsonNode list = doc.get("nodes");
        if (list == null || !list.isArray()) {
            throw new IllegalArgumentException("\"nodes\" is not a list");
        }
        if (list.size() != names.size()) {
            throw new IllegalArgumentException("\"nodes\" lists " + list.size() + " nodes; this config has "
                    + names.size() + " (" + String.join(", ", names) + ")");
        }
        Map<String, Spot> nodes = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            JsonNode n = list.get(i);
            String field = "nodes[" + i + "]";
            if (!n.isObject()) {
                throw new IllegalArgumentException(field + " is not an object");
            }
            JsonNode index = n.get("index");
            if (index == null || !index.isIntegralNumber() || index.asLong() != i) {
                throw new IllegalArgumentException(field + ".index is " + index + ", expected " + i);
            }
            JsonNode name = n.get("name");
            if (name == null || !name.isTextual() || !name.asText().equals(names.get(i))) {
                throw new IllegalArgumentException(field + ".name is " + name + ", expected \"" + names.get(i) + "\"");
            }
            nodes.put(names.get(i), spot(n, field));
        }
        return new Placement(coordinator, nodes, null);
    }

    private static Spot spot(JsonNode n, String field) {
        JsonNode ns = n == null ? null : n.get("netns");
        JsonNode addr = n == null ? null : n.get("addr");
        if (ns == null || !ns.isTextual() || addr == null || !addr.isTextual()) {
            throw new IllegalArgumentException(field + " needs string fields \"netns\" and \"addr\"");
        }
        if (!NETNS.matcher(ns.asText()).matches()) {
            throw new IllegalArgumentException(field + ".netns \"" + ns.asText() + "\" is not a namespace name");
        }
        if (!IPV4.matcher(addr.asText()).matches()) {
            throw new IllegalArgumentException(field + ".addr \"" + addr.asText() + "\" is not an IPv4 address");
        }
        return new Spot(ns.asText(), addr.asText());
    }

    /** Whether the nodes run in namespaces. */
    boolean inNamespaces() {
        return coordinator != null;
    }

    /** The orchestrator's address (rule 3). */
    String coordinatorAddr() {
        return coordinator == null ? LOOPBACK : coordinator.addr();
    }

    /** The address node `name` listens on and advertises. */
    String addr(String name) {
        return coordinator == null ? LOOPBACK : nodes.get(name).addr();
    }

    /** What goes before `java ...` to start node `name`: nothing, or `ip netns exec <netns>`. */
    List<String> execPrefix(String name) {
        if (coordinator == null) {
            return List.of();
        }
        return List.of(ip, "netns", "exec", nodes.get(name).netns());
    }

    private static String ipBinary() {
        String pathEnv = System.getenv().getOrDefault("PATH", "");
        List<Path> candidates = new ArrayList<>();
        for (String dir : pathEnv.split(":")) {
            if (!dir.isEmpty()) {
                candidates.add(Path.of(dir, "ip"));
            }
        }
        candidates.add(Path.of("/usr/sbin/ip"));
        candidates.add(Path.of("/sbin/ip"));
        for (Path p : candidates) {
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        throw new IllegalStateException("ip (iproute2) not found on PATH, /usr/sbin or /sbin; "
                + ENV_NETNS + " needs it to start the node JVMs in their namespaces");
    }
}

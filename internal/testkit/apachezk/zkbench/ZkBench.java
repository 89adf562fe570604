import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * ZkBench drives one ZooKeeper server with Apache's own Java client, the
 * client Java Dubbo nodes (through Curator) use in production.
 *
 * Usage: ZkBench ADDR OP CLIENTS BASE, OP one of get, set, create. It opens
 * CLIENTS sessions, creates BASE and one 100-byte child per session, prints
 * "zkbench ready", then reads commands on stdin:
 *   run N   N operations split among the sessions, one thread each, each
 *           waiting for its answer; prints "zkbench done NANOS"
 *   quit    closes the sessions and exits
 * Its answers start with "zkbench " so the client's own log lines, if any
 * reach stdout, are told apart.
 */
public final class ZkBench {
    public static void main(String[] args) throws Exception {
        String addr = args[0], op = args[1], base = args[3];
        int clients = Integer.parseInt(args[2]);
        ZooKeeper[] zks = new ZooKeeper[clients];
        for (int i = 0; i < clients; i++) {
            CountDownLatch connected = new CountDownLatch(1);
            zks[i] = new ZooKeeper(addr, 10000, e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(10, TimeUnit.SECONDS)) {
                System.out.println("zkbench error no session with " + addr + " after 10s");
                System.exit(1);
            }
        }
        byte[] data = new byte[100];
        Arrays.fill(data, (byte) 'p');
        zks[0].create(base, null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        for (int i = 0; i < clients; i++) {
            zks[0].create(base + "/" + i, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        }
        System.out.println("zkbench ready");
        System.out.flush();

        ExecutorService pool = Executors.newFixedThreadPool(clients);
        AtomicLong created = new AtomicLong();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("quit")) {
                break;
            }
            if (!line.startsWith("run ")) {
                System.out.println("zkbench error unknown command " + line);
                System.out.flush();
                continue;
            }
            long n = Long.parseLong(line.substring(4).trim());
            AtomicLong next = new AtomicLong();
            List<Future<?>> done = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < clients; i++) {
                ZooKeeper zk = zks[i];
                String own = base + "/" + i;
                done.add(pool.submit(() -> {
                    while (next.incrementAndGet() <= n) {
                        switch (op) {
                            case "get":
                                zk.getData(own, false, null);
                                break;
                            case "set":
                                zk.setData(own, data, -1);
                                break;
                            default:
                                zk.create(own + "/" + created.incrementAndGet(), data,
                                        ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                        }
                    }
                    return null;
                }));
            }
            String answer;
            try {
                for (Future<?> f : done) {
                    f.get();
                }
                answer = "zkbench done " + (System.nanoTime() - start);
            } catch (Exception e) {
                answer = "zkbench error " + e.getCause();
            }
            System.out.println(answer);
            System.out.flush();
        }
        pool.shutdownNow();
        for (ZooKeeper zk : zks) {
            zk.close();
        }
    }
}

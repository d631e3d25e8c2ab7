// Draws keys with YCSB 0.17's own CoreWorkload and counts them per key and per
// server under FarReach's key layout and partitioning (docs/workload.md).
//
// It lives in YCSB's package so that it can call CoreWorkload's package-private
// nextKeynum() (the key chooser with its redraw loop) and protected
// buildKeyName() exactly as CoreWorkload.doTransactionRead/Update do.
// Run it through scripts/ycsb_fixture.sh; nothing in the project imports it.
//
// Usage: YcsbKeyCounts RECORDS DRAWS DISTRIBUTION TOP SERVERS OUT.json
//   DISTRIBUTION: zipfian | uniform (YCSB's requestdistribution)
//   TOP: how many of the most drawn keys to list with their counts
//   SERVERS: comma-separated server counts, e.g. 1,4,16,32
package site.ycsb.workloads;

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.Arrays;
import java.util.Properties;
import java.util.zip.CRC32;

import site.ycsb.measurements.Measurements;

public final class YcsbKeyCounts {
  static final int BUCKETS = 32768;          // FarReach's hash partition count
  static final String[] PARTITIONS = {"range", "range-even", "hash"};

  private YcsbKeyCounts() { }

  /** FarReach Key.fromString: strip "user" and leading '0's, parse the rest as a long. */
  static long keyValue(String keystr) {
    int i = 4;
    while (keystr.charAt(i) == '0') {
      i++;
    }
    return Long.parseLong(keystr.substring(i));
  }

  /** FarReach Key.serialize (largeKey): keylolo, keylohi, keyhilo as big-endian
   *  32-bit words, then keyhihi's low and high 16-bit halves, each big-endian. */
  static byte[] wireKey(long v) {
    int keylolo = 0, keylohi = 0;
    int keyhilo = (int) v;            // lowest 4 bytes of the little-endian long
    int keyhihi = (int) (v >>> 32);   // highest 4 bytes
    int lo16 = keyhihi & 0xFFFF, hi16 = (keyhihi >>> 16) & 0xFFFF;
    return new byte[] {
      (byte) (keylolo >>> 24), (byte) (keylolo >>> 16), (byte) (keylolo >>> 8), (byte) keylolo,
      (byte) (keylohi >>> 24), (byte) (keylohi >>> 16), (byte) (keylohi >>> 8), (byte) keylohi,
      (byte) (keyhilo >>> 24), (byte) (keyhilo >>> 16), (byte) (keyhilo >>> 8), (byte) keyhilo,
      (byte) (lo16 >>> 8), (byte) lo16, (byte) (hi16 >>> 8), (byte) hi16,
    };
  }

  /** Server of a key: FarReach's Key.getRangePartitionIdx / getHashPartitionIdx, and
   *  kvperf's even range split of the populated top-32 bits (docs/workload.md). */
  static int server(String partition, long v, long crc, int n) {
    long keyhihi = (v >>> 32) & 0xFFFFFFFFL;
    switch (partition) {
      case "range": {
        long keyhihihi = (keyhihi >>> 16) & 0xFFFF;
        return (int) (keyhihihi / (64 * 1024 / n));
      }
      case "range-even":
        return (int) Math.min(n - 1, (keyhihi * n) >>> 31);
      default: {
        long hashresult = crc % BUCKETS;
        return (int) (hashresult / (BUCKETS / n));
      }
    }
  }

  public static void main(String[] a) throws Exception {
    long records = Long.parseLong(a[0]);
    int draws = Integer.parseInt(a[1]);
    String dist = a[2];
    int top = Integer.parseInt(a[3]);
    int[] ns = Arrays.stream(a[4].split(",")).mapToInt(Integer::parseInt).toArray();
    String out = a[5];

    Properties p = new Properties();
    p.setProperty("recordcount", Long.toString(records));
    p.setProperty("operationcount", Integer.toString(draws));
    p.setProperty("requestdistribution", dist);
    p.setProperty("insertorder", "hashed");
    p.setProperty("readproportion", "0.5");
    p.setProperty("updateproportion", "0.5");
    Measurements.setProperties(p);
    CoreWorkload w = new CoreWorkload();
    w.init(p);

    int[] counts = new int[(int) records];
    long t0 = System.nanoTime();
    for (int d = 0; d < draws; d++) {
      counts[(int) w.nextKeynum()]++;
    }
    System.err.printf("%d draws in %.1f s%n", draws, (System.nanoTime() - t0) / 1e9);

    // Per-server counts for every (server count, partition), over all drawn keys.
    long[][][] perServer = new long[ns.length][PARTITIONS.length][];
    for (int i = 0; i < ns.length; i++) {
      for (int j = 0; j < PARTITIONS.length; j++) {
        perServer[i][j] = new long[ns[i]];
      }
    }
    CRC32 crc = new CRC32();
    int maxCount = 0;
    long distinct = 0;
    for (int k = 0; k < records; k++) {
      int c = counts[k];
      if (c == 0) {
        continue;
      }
      distinct++;
      maxCount = Math.max(maxCount, c);
      long v = keyValue(w.buildKeyName(k));
      crc.reset();
      crc.update(wireKey(v));
      long h = crc.getValue();
      for (int i = 0; i < ns.length; i++) {
        for (int j = 0; j < PARTITIONS.length; j++) {
          perServer[i][j][server(PARTITIONS[j], v, h, ns[i])] += c;
        }
      }
    }

    // The TOP most drawn keys (ties: lower keynum first).
    long[] hist = new long[maxCount + 2];
    for (int k = 0; k < records; k++) {
      hist[counts[k]]++;
    }
    int threshold = maxCount + 1;
    long above = 0;
    while (threshold > 1 && above + hist[threshold - 1] <= top) {
      threshold--;
      above += hist[threshold];
    }
    // keys with count >= threshold number `above` <= top; fill with count threshold-1
    int need = (int) (top - above);
    int[] topKeys = new int[top];
    int m = 0;
    for (int k = 0; k < records && m < top; k++) {
      if (counts[k] >= threshold) {
        topKeys[m++] = k;
      } else if (threshold > 1 && counts[k] == threshold - 1 && need > 0) {
        topKeys[m++] = k;
        need--;
      }
    }
    Integer[] order = new Integer[m];
    for (int i = 0; i < m; i++) {
      order[i] = i;
    }
    final int[] tk = topKeys;
    Arrays.sort(order, (x, y) -> counts[tk[y]] != counts[tk[x]]
        ? Integer.compare(counts[tk[y]], counts[tk[x]]) : Integer.compare(tk[x], tk[y]));

    try (Writer o = new FileWriter(out)) {
      o.write("{\n \"generator\": \"YCSB 0.17.0 site.ycsb.workloads.CoreWorkload (Maven site.ycsb:core:0.17.0)\",\n");
      o.write(" \"requestdistribution\": \"" + dist + "\",\n \"insertorder\": \"hashed\",\n");
      o.write(" \"recordcount\": " + records + ",\n \"draws\": " + draws + ",\n");
      o.write(" \"distinct_keys\": " + distinct + ",\n \"hash_buckets\": " + BUCKETS + ",\n");
      o.write(" \"per_server\": {");
      for (int i = 0; i < ns.length; i++) {
        o.write((i > 0 ? "," : "") + "\n  \"" + ns[i] + "\": {");
        for (int j = 0; j < PARTITIONS.length; j++) {
          o.write((j > 0 ? ", " : "") + "\"" + PARTITIONS[j] + "\": " + Arrays.toString(perServer[i][j]));
        }
        o.write("}");
      }
      o.write("\n },\n");
      o.write(" \"top_keys_columns\": [\"keynum\", \"count\", \"key_value\", \"wire_crc32\"],\n");
      o.write(" \"top_keys\": [");
      for (int i = 0; i < m; i++) {
        int k = topKeys[order[i]];
        o.write((i > 0 ? "," : "") + (i % 8 == 0 ? "\n  " : " ") + "[" + k + "," + counts[k]);
        if (i < 500) {
          // name, wire key and CRC of the hottest keys, for a bit-for-bit check
          long v = keyValue(w.buildKeyName(k));
          crc.reset();
          crc.update(wireKey(v));
          o.write("," + v + "," + crc.getValue());
        }
        o.write("]");
      }
      o.write("\n ]\n}\n");
    }
  }
}

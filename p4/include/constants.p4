/* Sizes and protocol constants of the FarReach-style write-back cache.
 *
 * model/switch.py holds the same numbers in its CONSTANTS block;
 * tests/switch/test_p4_constants.py parses this file and fails if the two
 * drift apart, so change both together.
 */
#ifndef _KV_CONSTANTS_P4_
#define _KV_CONSTANTS_P4_

/* Cache: exact-match entries and per-entry register cells. */
#define CACHE_SIZE              16384
#define CACHE_IDX_BITS          14
/* Values: VALUE_WORDS 32-bit registers (one per word) = VALUE_BYTES. */
#define VALUE_WORDS             32
#define VALUE_BYTES             128
/* Partitioning: CRC32(key) mod HASH_BUCKETS; also the per-bucket seq counters. */
#define HASH_BUCKETS            32768
#define HASH_BUCKET_BITS        15
#define MAX_SERVERS             128
/* Hot-key detection: count-min sketch and "already reported" bitmap. */
#define CMS_ROWS                4
#define CMS_WIDTH               65536
#define CMS_INDEX_BITS          16
#define CMS_COUNTER_BITS        16
#define HOT_THRESHOLD           64
#define REPORT_BLOOM_BITS       262144
#define REPORT_BLOOM_INDEX_BITS 18
/* vallen register value marking a cached key as deleted. */
#define VALLEN_ABSENT           0xFFFF

/* UDP ports: clients talk to the switch's service port; server worker i
 * listens on KV_SERVER_PORT_BASE + i (MAX_SERVERS ports, one mask). */
#define KV_UDP_PORT             5008
#define KV_SERVER_PORT_BASE     5120
#define KV_SERVER_PORT_MASK     0xFF80

/* docs/protocol.md op codes and statuses. */
#define OP_GET                  1
#define OP_PUT                  2
#define OP_DEL                  3
#define OP_WB_PUT               4
#define OP_WB_DEL               5
#define OP_LOAD                 6
#define OP_REPLY                0x80
#define ST_OK                   0
#define ST_NOT_FOUND            1
#define ST_STALE                2

/* Cache entry states (state_reg). */
#define ENTRY_INVALID           0
#define ENTRY_VALID             1
#define ENTRY_EVICTING          2
#define ENTRY_POPULATING        3

/* Digest reasons. */
#define REPORT_HOT              1
#define REPORT_UNCACHEABLE      2

/* CMS row polynomials (reflected CRC-32 family, init/xor 0xFFFFFFFF).
 * Row 0 is CRC-32 itself, shared with the partition hash. */
#define CMS_POLY_0              0x04C11DB7
#define CMS_POLY_1              0x1EDC6F41
#define CMS_POLY_2              0x741B8CD7
#define CMS_POLY_3              0x814141AB

/* What egress must do with the value registers (bridged). */
#define CACHE_OP_NONE           0
#define CACHE_OP_READ           1
#define CACHE_OP_WRITE          2

#endif

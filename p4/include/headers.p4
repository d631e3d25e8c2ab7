/* Packet headers. The KV header is docs/protocol.md's 32-byte header; its
 * integers are little-endian on the wire, so vlen is split into bytes and
 * seq is byte-swapped in the pipeline before any arithmetic. */
#ifndef _KV_HEADERS_P4_
#define _KV_HEADERS_P4_

typedef bit<CACHE_IDX_BITS> cache_idx_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_UDP   = 17;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> len;
    bit<16> checksum;
}

header kv_h {
    bit<8>  op;
    bit<8>  status;
    bit<8>  vlen_lo;     /* vlen, little-endian: values are <= 128 B, */
    bit<8>  vlen_hi;     /* so vlen_hi is 0 for anything cacheable    */
    bit<32> seq_le;      /* little-endian sequence number             */
    bit<64> req_id;      /* opaque, echoed                            */
    bit<64> keyhi;       /* key bytes 0..7 (range partition: top 32)  */
    bit<64> keylo;       /* key bytes 8..15                           */
}

header val_word_h {
    bit<32> w;
}

/* Ingress -> egress: which value-register operation egress performs. */
header bridge_h {
    bit<8>      cache_op;   /* CACHE_OP_*                        */
    bit<8>      vwords;     /* words carried by a write hit      */
    bit<32>     vmask;      /* bit i set: word i is read/written */
    bit<2>      pad;
    cache_idx_t idx;
}

struct headers_t {
    bridge_h                 bridge;
    ethernet_h               ethernet;
    ipv4_h                   ipv4;
    udp_h                    udp;
    kv_h                     kv;
    val_word_h[VALUE_WORDS]  vals;
}

struct report_digest_t {
    bit<64> keyhi;
    bit<64> keylo;
    bit<8>  reason;
}

struct ig_meta_t {
    bit<32>     crc;         /* CRC-32 of the key                    */
    bit<32>     part_key;    /* top key bits or bucket               */
    bit<32>     cms_h1;      /* CRC variants of the key (CMS rows 1-3) */
    bit<32>     cms_h2;
    bit<32>     cms_h3;
    bit<16>     cms_idx0;
    bit<16>     cms_idx1;
    bit<16>     cms_idx2;
    bit<16>     cms_idx3;
    bit<1>      hot0;
    bit<1>      hot1;
    bit<1>      hot2;
    bit<1>      hot3;
    bit<1>      reported;
    cache_idx_t idx;
    bit<8>      state;
    bit<32>     new_seq;     /* seq stamped on a write (host order)  */
    bit<32>     seq_in;      /* seq carried by the packet (host)     */
    bit<32>     seq_out;     /* seq to put in a reply (host)         */
    bit<1>      reply_newer;
    bit<16>     vallen;
    bit<8>      vwords;
    bit<8>      reason;
    bit<2>      stat_idx;
    bit<1>      fwd_by_ip;
}

struct eg_meta_t {
}

#endif

package cdcbackfill.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * One pass over a Debezium JSON line, for bench.jvm_parse: the op, the key's, before's and after's texts,
 * the key's and the row's names, and the source's fields as text, read by Jackson's streaming parser
 * (which Spark ships). A probe of what a parser of the ingest's own on the JVM would cost: it does not
 * build positions, pair key changes or refuse what the Python parser would quarantine.
 */
public class LineParse implements UDF1<String, Row> {
  private static final JsonFactory F = new JsonFactory();
  private transient ByteArrayOutputStream out;

  private String copy(JsonParser p, List<String> names) throws Exception {
    if (p.currentToken() == JsonToken.VALUE_NULL) return null;
    if (out == null) out = new ByteArrayOutputStream(1024);
    out.reset();
    try (JsonGenerator g = F.createGenerator(out)) {
      if (names != null && p.currentToken() == JsonToken.START_OBJECT) {
        g.writeStartObject();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String n = p.currentName();
          names.add(n);
          g.writeFieldName(n);
          p.nextToken();
          g.copyCurrentStructure(p);
        }
        g.writeEndObject();
      } else {
        g.copyCurrentStructure(p);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  private static String scalar(JsonParser p) throws Exception {
    JsonToken t = p.currentToken();
    if (t == JsonToken.VALUE_NULL) return null;
    if (t.isScalarValue()) return p.getText();
    p.skipChildren();
    return "<structure>";
  }

  @Override
  public Row call(String line) throws Exception {
    String key = null, before = null, after = null, op = null, connector = null, schema = null, table = null;
    String lsn = null, txId = null, commit = null, ts = null, snapshot = null, partition = null, offset = null;
    List<String> keyNames = new ArrayList<>(), rowNames = new ArrayList<>(), beforeNames = new ArrayList<>();
    try (JsonParser p = F.createParser(line)) {
      if (p.nextToken() != JsonToken.START_OBJECT) return null;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String f = p.currentName();
        p.nextToken();
        if (f.equals("key")) key = copy(p, keyNames);
        else if (f.equals("partition")) partition = scalar(p);
        else if (f.equals("offset")) offset = scalar(p);
        else if (f.equals("value") && p.currentToken() == JsonToken.START_OBJECT) {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String v = p.currentName();
            p.nextToken();
            if (v.equals("before")) before = copy(p, beforeNames);
            else if (v.equals("after")) after = copy(p, rowNames);
            else if (v.equals("op")) op = scalar(p);
            else if (v.equals("source") && p.currentToken() == JsonToken.START_OBJECT) {
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                String s = p.currentName();
                p.nextToken();
                String val = scalar(p);
                switch (s) {
                  case "connector": connector = val; break;
                  case "schema": schema = val; break;
                  case "table": table = val; break;
                  case "lsn": lsn = val; break;
                  case "txId": txId = val; break;
                  case "commit_lsn": commit = val; break;
                  case "ts_ms": ts = val; break;
                  case "snapshot": snapshot = val; break;
                  default: break;
                }
              }
            } else p.skipChildren();
          }
        } else p.skipChildren();
      }
      if (p.nextToken() != null) return null;  // anything after the object: not read here
    } catch (Exception e) {
      return null;
    }
    return RowFactory.create(op, key, before, after, connector, schema, table, lsn, txId, commit, ts, snapshot,
        partition, offset, String.join(",", keyNames), String.join(",", after != null ? rowNames : beforeNames));
  }
}

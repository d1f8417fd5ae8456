//! Where one RESP2 reply ends in a read buffer. The direct connection reads until a whole reply
//! is there, then hands exactly those bytes to redis-rs's own parser, so values (errors, nil,
//! nested arrays) come out the same as on any redis-rs connection.

/// The length in bytes of the first whole reply at the start of `buf`; `Ok(None)` if more
/// bytes are needed; an error if the bytes are not RESP2.
pub(crate) fn reply_len(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut pos = 0;
    // Replies still to step over: an array adds its elements to this count.
    let mut pending = 1usize;
    while pending > 0 {
        let Some(line_len) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        if line_len == 0 {
            return Err("a reply line without a type byte".to_owned());
        }
        let kind = buf[pos];
        let line = &buf[pos + 1..pos + line_len];
        pos += line_len + 2;
        pending -= 1;
        match kind {
            b'+' | b'-' | b':' => {}
            b'$' => {
                // A negative length is nil: no body follows.
                if let Ok(body) = usize::try_from(parse_int(line)?) {
                    let end = pos + body + 2;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    pos = end;
                }
            }
            b'*' => {
                if let Ok(count) = usize::try_from(parse_int(line)?) {
                    pending += count;
                }
            }
            other => return Err(format!("unexpected reply type byte {other:#04x}")),
        }
    }
    Ok(Some(pos))
}

fn parse_int(line: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad length line {:?}", String::from_utf8_lossy(line)))
}

#[cfg(test)]
mod tests {
    use super::reply_len;

    #[test]
    fn simple_replies_end_at_their_line() {
        assert_eq!(reply_len(b":42\r\n"), Ok(Some(5)));
        assert_eq!(reply_len(b"+OK\r\n:1\r\n"), Ok(Some(5)));
        assert_eq!(reply_len(b"-ERR wrong type\r\n"), Ok(Some(17)));
    }

    #[test]
    fn bulk_strings_are_measured_by_length_not_by_line() {
        let reply = b"$7\r\na\r\nb\r\nc\r\n";
        assert_eq!(reply_len(reply), Ok(Some(reply.len())));
        assert_eq!(reply_len(b"$-1\r\n"), Ok(Some(5)));
        assert_eq!(reply_len(b"$0\r\n\r\n"), Ok(Some(6)));
    }

    #[test]
    fn arrays_include_their_nested_elements() {
        let reply = b"*2\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n";
        assert_eq!(reply_len(reply), Ok(Some(reply.len())));
        assert_eq!(reply_len(b"*-1\r\n"), Ok(Some(5)));
        assert_eq!(reply_len(b"*0\r\n"), Ok(Some(4)));
    }

    #[test]
    fn a_partial_reply_asks_for_more_bytes() {
        let reply = b"*2\r\n$3\r\nabc\r\n:12\r\n";
        for cut in 0..reply.len() {
            assert_eq!(reply_len(&reply[..cut]), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn bytes_that_are_not_resp_are_an_error() {
        assert!(reply_len(b"HTTP/1.1 400\r\n").is_err());
        assert!(reply_len(b"$x\r\n").is_err());
        assert!(reply_len(b"\r\n").is_err());
    }
}

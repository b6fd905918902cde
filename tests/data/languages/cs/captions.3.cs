Na zahradě stojí dva muži a dívají se na zem.
Dítě na červeném kole.
Na pláži pes honí tenisový míček.
Ve světlé kuchyni žena připravuje večeři.
Několik chlapců a dívek kope do míče v parku.
Muž s brýlemi sedí na lavičce.
Malá holčička skáče do bazénu s pokrčenýma nohama.
Dva psi se přetahují na zasněžené louce.
Muž na skateboardu.
Pouliční muzikant zpívá a hraje na kytaru před obchodem.
Prší a žena jde s deštníkem.
Dvě ženy a muž sedí venku před kavárnou.
Dítě v kraťasech leze na strom.
Muž v lodi nahazuje udici.
Diváci sledují barevný průvod.
Pes plave v řece.
Muž na silničním kole jede po klikaté silnici v horách.
Mladá maminka nakupuje na trhu.
Děti staví u moře hrad z písku.
Ve velké kuchyni krájí kuchař papriky a cukety.
Muž s ochrannou přilbou a reflexní vestou leze na lešení.
Nevěsta v bílých šatech tančí se ženichem.
Dítě se zmrzlinou na obličeji.
Hráč v červeném a hráč v modrém bojují o míč.
Žena ve sportovním oblečení běží se psem.
Surfař v neoprenu klouže vlnou.
Rodina jí venku v parku.
Babička plete z červené vlny.
Dva bratři vyskakují vysoko do vzduchu.
Muž šroubuje na kole.
Jezdkyně a její kůň při parkuru.
Kachny plavou k dítěti na břehu.
Několik studentů čte knihy.
Na stánku leží pomeranče, banány a jablka.
Muž s aktovkou mluví na nástupišti do telefonu.
Muž na snowboardu skáče z můstku.
Skupina žáků jde do školy.
Pes něco chytá – nejspíš frisbee!
Zpěvák a jeho kapela na pódiu v záři reflektorů.
Mladá žena s fotoaparátem stojí na břehu.
Muž s lanem a helmou šplhá na skálu.
Dvě ženy míchají těsto v míse.
Dítě hraje fotbal na ulici.
Muž nese v náručí malé dítě.
Maratonci se startovními čísly jako 1024 běží městem.
Muž na žebříku natírá zeď.
Dítě jezdí na koni; je mu asi 5 let.
Muž s kapucí čeká v dešti.
Před kostelem stojí hodně lidí.
Unavený pes leží na polštáři.
Chlapec a dívka se houpou vedle sebe.
Žena jde po ulici s košem na hlavě.
Prodavač stojí za grilem.
Dospívající kluk dribluje na hřišti.
Pár na pláži.
Harmonikář sedí na židli.
Muži vykládají dodávku.
Dívka slaví narozeniny.
Muž na motorce.
Psí spřežení jede po zasněžené pláni.
Mladá žena se protahuje na podložce u moře.
Několik dětí se smíchem běhá mezi vodotrysky.
Muž a dítě drží pruty přes zábradlí.
Číšník ve vestě servíruje jídlo.
Bezdomovec spí na lavičce.
Žena na starém kole.
Hasič drží hadici.
Dívka čte.
Několik kajaků na řece.
Muž odhazuje sníh.
Dva muži hrají deskovou hru.
Dítě kreslí na chodník sluníčko.
Venčitelka psů s několika psy na vodítku.
Pracovník s košťátem uklízí ulici.
Dítě skáče z kamene do jezera.
Tři turisté na úzké stezce.
Žena zpívá píseň, možná „Holubí dům“.
Muž táhne po ulici ruční vozík.
Lidé cestují metrem.
Bílý pes skáče trávou.
